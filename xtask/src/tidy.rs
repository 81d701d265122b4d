//! `tidy`: size limits on source files and functions, and a ban on blocking the async runtime in the broker,
//! enforced as a ratchet.
//!
//! Rules (checked on every `.rs` file under `crates/` and `xtask/`, `target/` excluded):
//! * a non-test source file has at most [`FILE_LIMIT`] lines; a test file (named `tests.rs` or `*_tests.rs`,
//!   under a `tests/` or `benches/` folder, or declared as a `#[cfg(test)] mod`) at most [`TEST_FILE_LIMIT`];
//! * a function in non-test code (free, impl or trait default; closures excluded) spans at most [`FN_LIMIT`]
//!   lines, from the line of `fn` to the line of its closing brace;
//! * non-test code in `crates/broker` names neither `block_on` nor `block_in_place` (they pin a runtime
//!   worker while waiting);
//! * non-test code in `crates/broker/src` outside `server/` names no `ErrorCode` value (`ErrorCode::X`,
//!   `ErrorCode(n)`): layers return typed errors and only the server edge (`server/apis/errors.rs`) maps
//!   them to Kafka codes. Naming the type (imports, signatures) is not counted.
//!
//! Today's offenders are listed in `xtask/tidy-allow.txt` with their current size. The list may only shrink:
//! an offender that grew fails; one that shrank but is still over the limit prints a note asking to lower its
//! number; one that is now within the limit (or gone) fails until its line is removed, so the list stays true.
//! Functions are found by parsing with `syn`, not by counting braces.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

/// Most lines in a non-test source file.
pub const FILE_LIMIT: usize = 800;
/// Most lines in a test file.
pub const TEST_FILE_LIMIT: usize = 1200;
/// Most lines in a non-test function.
pub const FN_LIMIT: usize = 100;
/// Names that block a thread on a future; banned in the broker's non-test code.
pub const BLOCKING_CALLS: &[&str] = &["block_on", "block_in_place"];
/// Where the blocking-call ban applies.
const BLOCKING_SCOPE: &str = "crates/broker/";
/// Where the error-code rule applies, and the edge it exempts.
const ERROR_CODE_SCOPE: &str = "crates/broker/src/";
const ERROR_CODE_EDGE: &str = "crates/broker/src/server/";
/// The type whose values only the edge names.
const ERROR_CODE_TYPE: &str = "ErrorCode";
/// The ratchet file, relative to the repository root.
pub const ALLOW_FILE: &str = "xtask/tidy-allow.txt";

/// What a measurement is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Lines of a non-test file.
    File,
    /// Lines of a test file.
    TestFile,
    /// Lines of a function; the string names it (`Type::method` or `function`).
    Fn(String),
    /// Number of `block_on` / `block_in_place` names in a file's non-test code.
    Blocking,
    /// Number of `ErrorCode` values (`ErrorCode::X`, `ErrorCode(n)`) in a broker file's non-test code
    /// outside `server/`.
    ErrorCodes,
}

impl Kind {
    fn limit(&self) -> usize {
        match self {
            Kind::File => FILE_LIMIT,
            Kind::TestFile => TEST_FILE_LIMIT,
            Kind::Fn(_) => FN_LIMIT,
            Kind::Blocking | Kind::ErrorCodes => 0,
        }
    }

    fn what(&self) -> String {
        match self {
            Kind::File => "file".into(),
            Kind::TestFile => "test file".into(),
            Kind::Fn(name) => format!("fn `{name}`"),
            Kind::Blocking => "block_on/block_in_place uses".into(),
            Kind::ErrorCodes => "ErrorCode values outside the server edge".into(),
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Kind::Blocking | Kind::ErrorCodes => "",
            _ => " lines",
        }
    }
}

/// One measured item: where it is and how big.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// 1-based line where the item starts (1 for files).
    pub line: usize,
    /// What was measured.
    pub kind: Kind,
    /// Lines, or a count for [`Kind::Blocking`] and [`Kind::ErrorCodes`].
    pub size: usize,
}

/// The key an allow-list line matches: path and kind.
type Key = (String, Kind);

/// The result of a check.
#[derive(Debug, Default)]
pub struct Report {
    /// Violations: the check fails when this is not empty.
    pub errors: Vec<String>,
    /// Offenders that shrank: their allow-list number can be lowered.
    pub notes: Vec<String>,
    /// Every current offender in allow-list syntax (what the list would say if written today).
    pub offenders: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        for e in &self.errors {
            writeln!(f, "error: {e}")?;
        }
        Ok(())
    }
}

/// Checks the repository at `root` against its allow list.
pub fn check_repo(root: &Path) -> Result<Report, String> {
    let measures = measure_repo(root)?;
    let allow_path = root.join(ALLOW_FILE);
    let allow_text =
        fs::read_to_string(&allow_path).map_err(|e| format!("{}: {e}", allow_path.display()))?;
    let allow = parse_allow(&allow_text)?;
    Ok(check(&measures, &allow))
}

/// Measures every Rust source file under `root/crates` and `root/xtask`.
pub fn measure_repo(root: &Path) -> Result<Vec<Measure>, String> {
    let mut files = Vec::new();
    for dir in ["crates", "xtask"] {
        collect_rs_files(&root.join(dir), &mut files)?;
    }
    files.sort();
    let mut sources = Vec::with_capacity(files.len());
    for file in &files {
        let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        sources.push((rel, text));
    }
    measure_sources(&sources)
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        let file_type = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if file_type.is_dir() {
            if entry.file_name() != "target" {
                collect_rs_files(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Measures `(path, text)` pairs (paths relative to the repository root, `/`-separated).
pub fn measure_sources(sources: &[(String, String)]) -> Result<Vec<Measure>, String> {
    let mut parsed = Vec::with_capacity(sources.len());
    let mut test_modules = BTreeSet::new();
    for (path, text) in sources {
        let file = syn::parse_file(text).map_err(|e| {
            let at = e.span().start();
            format!("{path}:{}:{}: cannot parse: {e}", at.line, at.column + 1)
        })?;
        for name in cfg_test_mod_decls(&file.items) {
            let dir = module_dir(path);
            test_modules.insert(format!("{dir}{name}.rs"));
            test_modules.insert(format!("{dir}{name}/mod.rs"));
        }
        parsed.push(file);
    }
    let mut out = Vec::new();
    for ((path, text), file) in sources.iter().zip(&parsed) {
        let is_test = is_test_path(path) || test_modules.contains(path);
        out.push(Measure {
            path: path.clone(),
            line: 1,
            kind: if is_test { Kind::TestFile } else { Kind::File },
            size: text.lines().count(),
        });
        if is_test {
            continue;
        }
        let mut v = FnVisitor::default();
        v.visit_file(file);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (name, line, size) in v.fns {
            let n = seen.entry(name.clone()).or_default();
            *n += 1;
            let name = if *n == 1 { name } else { format!("{name}#{n}") };
            out.push(Measure {
                path: path.clone(),
                line,
                kind: Kind::Fn(name),
                size,
            });
        }
        if path.starts_with(BLOCKING_SCOPE) && !v.blocking.is_empty() {
            out.push(Measure {
                path: path.clone(),
                line: v.blocking[0],
                kind: Kind::Blocking,
                size: v.blocking.len(),
            });
        }
        let in_error_scope =
            path.starts_with(ERROR_CODE_SCOPE) && !path.starts_with(ERROR_CODE_EDGE);
        if in_error_scope && !v.error_codes.is_empty() {
            out.push(Measure {
                path: path.clone(),
                line: v.error_codes[0],
                kind: Kind::ErrorCodes,
                size: v.error_codes.len(),
            });
        }
    }
    Ok(out)
}

/// Test files by name or folder: `tests.rs`, `*_tests.rs`, anything under `tests/` or `benches/`.
fn is_test_path(path: &str) -> bool {
    let mut parts = path.split('/').collect::<Vec<_>>();
    let name = parts.pop().unwrap_or_default();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || parts.iter().any(|p| *p == "tests" || *p == "benches")
}

/// The folder holding the child modules of the module in file `path` (`src/a.rs` → `src/a/`, `src/lib.rs` →
/// `src/`).
fn module_dir(path: &str) -> String {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    match name {
        "lib.rs" | "main.rs" | "mod.rs" | "build.rs" => prefix,
        _ => format!("{prefix}{}/", name.trim_end_matches(".rs")),
    }
}

/// Names of `#[cfg(test)] mod name;` declarations (modules kept in their own file).
fn cfg_test_mod_decls(items: &[syn::Item]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() && is_test_only(&m.attrs) => {
                Some(m.ident.to_string())
            }
            _ => None,
        })
        .collect()
}

/// `#[test]`, `#[tokio::test]`, `#[cfg(test)]` or `#[cfg(all(test, ..))]`: code that exists only in test builds.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        if a.path().segments.last().is_some_and(|s| s.ident == "test") {
            return true; // #[test], #[tokio::test]
        }
        if !a.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = a.meta.require_list() else {
            return false;
        };
        let tokens: String = list
            .tokens
            .to_string()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        tokens == "test" || tokens.starts_with("all(test,") || tokens.contains(",test,")
    })
}

/// Collects non-test functions and blocking-call names of one file.
#[derive(Default)]
struct FnVisitor {
    /// The `impl` or `trait` the visitor is inside, for qualified names.
    owner: Vec<String>,
    /// (name, first line, lines).
    fns: Vec<(String, usize, usize)>,
    /// Lines naming a blocking call.
    blocking: Vec<usize>,
    /// Lines naming an `ErrorCode` value.
    error_codes: Vec<usize>,
}

impl FnVisitor {
    fn record(&mut self, ident: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{ident}"),
            None => ident.to_string(),
        };
        self.fns.push((name, start, end + 1 - start));
    }
}

fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "_".into(), |s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "_".into(),
    }
}

impl<'ast> Visit<'ast> for FnVisitor {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test_only(&f.attrs) {
            return;
        }
        self.record(&f.sig.ident, &f.sig.fn_token, &f.block);
        // Functions nested in a function body are measured on their own (and also count toward the outer one).
        let saved = std::mem::take(&mut self.owner);
        visit::visit_item_fn(self, f);
        self.owner = saved;
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test_only(&i.attrs) {
            return;
        }
        self.owner.push(type_name(&i.self_ty));
        visit::visit_item_impl(self, i);
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test_only(&f.attrs) {
            return;
        }
        self.record(&f.sig.ident, &f.sig.fn_token, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if is_test_only(&t.attrs) {
            return;
        }
        self.owner.push(t.ident.to_string());
        visit::visit_item_trait(self, t);
        self.owner.pop();
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            if !is_test_only(&f.attrs) {
                self.record(&f.sig.ident, &f.sig.fn_token, block);
            }
        }
        visit::visit_trait_item_fn(self, f);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        if BLOCKING_CALLS.iter().any(|b| ident == b) {
            self.blocking.push(ident.span().start().line);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        // `ErrorCode::X` (a value, or a pattern); a path ending in `ErrorCode` is the type.
        let n = p.segments.len();
        if let Some(s) = p
            .segments
            .iter()
            .take(n.saturating_sub(1))
            .find(|s| s.ident == ERROR_CODE_TYPE)
        {
            self.error_codes.push(s.ident.span().start().line);
        }
        visit::visit_path(self, p);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        // `ErrorCode(n)`: the tuple constructor.
        if let syn::Expr::Path(p) = &*c.func {
            if let Some(last) = p
                .path
                .segments
                .last()
                .filter(|s| s.ident == ERROR_CODE_TYPE)
            {
                self.error_codes.push(last.ident.span().start().line);
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Macro bodies are not parsed as syntax; scan their tokens so `select!`/`assert!` arguments count too.
        scan_tokens(m.tokens.clone(), self);
        visit::visit_macro(self, m);
    }
}

fn scan_tokens(tokens: proc_macro2::TokenStream, v: &mut FnVisitor) {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(tt) = tokens.next() {
        match tt {
            proc_macro2::TokenTree::Ident(i) if BLOCKING_CALLS.iter().any(|b| i == b) => {
                v.blocking.push(i.span().start().line);
            }
            proc_macro2::TokenTree::Ident(i) if i == ERROR_CODE_TYPE => {
                let value = match tokens.peek() {
                    Some(proc_macro2::TokenTree::Punct(p)) => p.as_char() == ':',
                    Some(proc_macro2::TokenTree::Group(g)) => {
                        g.delimiter() == proc_macro2::Delimiter::Parenthesis
                    }
                    _ => false,
                };
                if value {
                    v.error_codes.push(i.span().start().line);
                }
            }
            proc_macro2::TokenTree::Group(g) => scan_tokens(g.stream(), v),
            _ => {}
        }
    }
}

/// Parses the allow list: one offender per line, `<kind> <path> [<fn name>] <size>`, where kind is `file`,
/// `test-file`, `fn`, `blocking` or `error-codes`; `#` starts a comment.
pub fn parse_allow(text: &str) -> Result<BTreeMap<Key, usize>, String> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = || format!("{ALLOW_FILE}:{}: cannot read `{raw}`", i + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        let (kind, path, size) = match words.as_slice() {
            ["file", path, size] => (Kind::File, path, size),
            ["test-file", path, size] => (Kind::TestFile, path, size),
            ["blocking", path, size] => (Kind::Blocking, path, size),
            ["error-codes", path, size] => (Kind::ErrorCodes, path, size),
            ["fn", path, name, size] => (Kind::Fn(name.to_string()), path, size),
            _ => return Err(bad()),
        };
        let size: usize = size.parse().map_err(|_| bad())?;
        if out.insert((path.to_string(), kind), size).is_some() {
            return Err(format!("{ALLOW_FILE}:{}: listed twice: `{raw}`", i + 1));
        }
    }
    Ok(out)
}

fn allow_line(m: &Measure) -> String {
    match &m.kind {
        Kind::File => format!("file {} {}", m.path, m.size),
        Kind::TestFile => format!("test-file {} {}", m.path, m.size),
        Kind::Blocking => format!("blocking {} {}", m.path, m.size),
        Kind::ErrorCodes => format!("error-codes {} {}", m.path, m.size),
        Kind::Fn(name) => format!("fn {} {} {}", m.path, name, m.size),
    }
}

/// Compares measurements with the allow list.
pub fn check(measures: &[Measure], allow: &BTreeMap<Key, usize>) -> Report {
    let mut report = Report::default();
    let mut current: BTreeMap<Key, &Measure> = BTreeMap::new();
    for m in measures {
        current.insert((m.path.clone(), m.kind.clone()), m);
        let limit = m.kind.limit();
        if m.size <= limit {
            continue;
        }
        report.offenders.push(allow_line(m));
        let (what, unit) = (m.kind.what(), m.kind.unit());
        let at = format!("{}:{}", m.path, m.line);
        match allow.get(&(m.path.clone(), m.kind.clone())) {
            None => report.errors.push(format!(
                "{at}: {what} has {}{unit}, over the limit of {limit}",
                m.size
            )),
            Some(&listed) if m.size > listed => report.errors.push(format!(
                "{at}: {what} grew to {}{unit}; {ALLOW_FILE} allows {listed} (limit {limit}): make it smaller",
                m.size
            )),
            Some(&listed) if m.size < listed => report.notes.push(format!(
                "{at}: {what} shrank to {}{unit}: lower its number in {ALLOW_FILE} from {listed} to {}",
                m.size, m.size
            )),
            Some(_) => {}
        }
    }
    for ((path, kind), listed) in allow {
        let now = current.get(&(path.clone(), kind.clone()));
        let within = match now {
            None => true,
            Some(m) => m.size <= kind.limit(),
        };
        if within {
            let line = now.map_or(1, |m| m.line);
            let size = now.map_or(0, |m| m.size);
            report.errors.push(format!(
                "{path}:{line}: {} is now {size}{}, within the limit of {} (listed at {listed}): remove its line from {ALLOW_FILE}",
                kind.what(),
                kind.unit(),
                kind.limit()
            ));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(path: &str, text: &str) -> (String, String) {
        (path.to_string(), text.to_string())
    }

    fn long_fn(name: &str, body_lines: usize) -> String {
        let mut s = format!("fn {name}() {{\n");
        for i in 0..body_lines {
            s.push_str(&format!("    let _x{i} = {i};\n"));
        }
        s.push_str("}\n");
        s
    }

    #[test]
    fn measures_free_impl_and_trait_default_fns_but_not_tests() {
        let text = format!(
            "struct S;\nimpl S {{\n    pub async fn m(&self) {{\n    }}\n}}\ntrait T {{\n    fn d(&self) {{}}\n    fn r(&self);\n}}\n{}#[cfg(test)]\nmod tests {{\n{}}}\n#[test]\n{}",
            long_fn("f", 3),
            long_fn("in_test_mod", 200),
            long_fn("a_test", 200),
        );
        let m = measure_sources(&[src("crates/a/src/lib.rs", &text)]).unwrap();
        let fns: Vec<(String, usize, usize)> = m
            .iter()
            .filter_map(|m| match &m.kind {
                Kind::Fn(n) => Some((n.clone(), m.line, m.size)),
                _ => None,
            })
            .collect();
        assert_eq!(
            fns,
            vec![
                ("S::m".to_string(), 3, 2),
                ("T::d".to_string(), 7, 1),
                ("f".to_string(), 10, 5),
            ]
        );
    }

    #[test]
    fn classifies_test_files() {
        assert!(is_test_path("crates/a/src/tests.rs"));
        assert!(is_test_path("crates/a/src/partition_tests.rs"));
        assert!(is_test_path("crates/a/tests/common/mod.rs"));
        assert!(is_test_path("crates/a/benches/b.rs"));
        assert!(!is_test_path("crates/a/src/log.rs"));
        assert_eq!(module_dir("crates/a/src/lib.rs"), "crates/a/src/");
        assert_eq!(
            module_dir("crates/a/src/control.rs"),
            "crates/a/src/control/"
        );
        // A `#[cfg(test)] mod sample;` makes sample.rs a test file, with no function limit.
        let lib = "#[cfg(test)]\nmod sample;\nmod real;\n";
        let m = measure_sources(&[
            src("crates/a/src/lib.rs", lib),
            src("crates/a/src/sample.rs", &long_fn("big", 150)),
            src("crates/a/src/real.rs", "fn small() {}\n"),
        ])
        .unwrap();
        let kind_of = |p: &str| m.iter().find(|m| m.path == p).unwrap().kind.clone();
        assert_eq!(kind_of("crates/a/src/sample.rs"), Kind::TestFile);
        assert_eq!(kind_of("crates/a/src/real.rs"), Kind::File);
        assert!(!m.iter().any(|m| m.kind == Kind::Fn("big".into())));
    }

    #[test]
    fn counts_blocking_calls_in_broker_non_test_code_only() {
        let text = "fn a() { rt.block_on(x); tokio::task::block_in_place(|| ()); }\nfn b() { assert!(h.block_on(y)); }\n#[cfg(test)]\nmod tests { fn t() { rt.block_on(z); } }\n";
        let m = measure_sources(&[
            src("crates/broker/src/x.rs", text),
            src("crates/other/src/x.rs", text),
        ])
        .unwrap();
        let blocking: Vec<_> = m.iter().filter(|m| m.kind == Kind::Blocking).collect();
        assert_eq!(blocking.len(), 1);
        assert_eq!(
            (
                blocking[0].path.as_str(),
                blocking[0].line,
                blocking[0].size
            ),
            ("crates/broker/src/x.rs", 1, 3)
        );
    }

    #[test]
    fn counts_error_code_values_in_broker_layers_only() {
        let text = "use protocol::error::ErrorCode;\nfn a(c: ErrorCode) -> types::ErrorCode { ErrorCode::NONE }\nfn b() { let _ = ErrorCode(-1); match x { ErrorCode::NONE => {} _ => {} } }\nfn c() { assert_eq!(x, ErrorCode::NONE, \"{}\", ErrorCode(3)); let _ = ErrorCode; }\n#[cfg(test)]\nmod tests { fn t() { ErrorCode::NONE; } }\n";
        let m = measure_sources(&[
            src("crates/broker/src/topics.rs", text),
            src("crates/broker/src/server/apis/errors.rs", text),
            src("crates/replica/src/x.rs", text),
        ])
        .unwrap();
        let found: Vec<_> = m
            .iter()
            .filter(|m| m.kind == Kind::ErrorCodes)
            .map(|m| (m.path.as_str(), m.line, m.size))
            .collect();
        assert_eq!(found, vec![("crates/broker/src/topics.rs", 2, 5)]);
    }

    #[test]
    fn ratchet_fails_growth_and_stale_entries_and_notes_shrinkage() {
        let measure = |path: &str, kind: Kind, size| Measure {
            path: path.into(),
            line: 7,
            kind,
            size,
        };
        let measures = vec![
            measure("a.rs", Kind::File, 900),
            measure("b.rs", Kind::File, 850),
            measure("c.rs", Kind::File, 820),
            measure("d.rs", Kind::File, 700),
            measure("e.rs", Kind::Fn("big".into()), 101),
            measure("f.rs", Kind::Blocking, 2),
        ];
        let allow = parse_allow(
            "# comment\nfile a.rs 900\nfile b.rs 840  # grew\nfile c.rs 830\nfile d.rs 810\nfn gone.rs f 120\nblocking f.rs 2\n",
        )
        .unwrap();
        let r = check(&measures, &allow);
        assert_eq!(r.notes.len(), 1, "{r}");
        assert!(
            r.notes[0].starts_with("c.rs:7: file shrank to 820 lines"),
            "{r}"
        );
        let errors = r.errors.join("\n");
        assert_eq!(r.errors.len(), 4, "{errors}");
        assert!(
            errors.contains("b.rs:7: file grew to 850 lines"),
            "{errors}"
        );
        assert!(errors.contains("e.rs:7: fn `big` has 101 lines, over the limit of 100"));
        assert!(errors.contains("d.rs:7: file is now 700 lines"), "{errors}");
        assert!(
            errors.contains("gone.rs:1: fn `f` is now 0 lines"),
            "{errors}"
        );
        assert_eq!(r.offenders.len(), 5);
    }

    #[test]
    fn allow_list_syntax_errors_are_reported() {
        assert!(parse_allow("file a.rs\n").is_err());
        assert!(parse_allow("fn a.rs 12\n").is_err());
        assert!(parse_allow("file a.rs x\n").is_err());
        assert!(parse_allow("file a.rs 1\nfile a.rs 2\n").is_err());
    }
}
