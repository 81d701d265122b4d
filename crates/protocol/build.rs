//! Code generator: reads `schema/*.schema` and writes `$OUT_DIR/messages.rs` (included by
//! `src/messages.rs`). Standard library only.
//!
//! # Schema format
//!
//! One file per message, named `<module>.schema` (e.g. `produce_request.schema` generates the
//! module `messages::produce_request`). Lines starting with `#` are comments; blank lines are
//! ignored. A file holds blocks; each block is a header line followed by indented field lines.
//!
//! ```text
//! request ProduceRequest key=0 versions=3-13 flexible=9+
//!   transactional_id  string              v3+  null=3+  default=null
//!   topic_data        []TopicProduceData  v3+
//!
//! struct TopicProduceData
//!   name              string              v3-12
//!   topic_id          uuid                v13+
//! ```
//!
//! * The first block is the message: `request` or `response`, its Kafka name, `key=` the API
//!   key, `versions=` the valid versions and `flexible=` the first flexible version (`none` if
//!   the message has none). Every other block is `struct Name`: a struct used by a field.
//! * A field line is `name type vRANGE [null=RANGE] [tag=N] [default=VALUE]`:
//!   - `name`: Kafka's field name in snake_case (the Rust field name).
//!   - `type`: `bool int8 int16 int32 int64 uint16 float64 string bytes records uuid`, a struct
//!     name, or `[]T` for an array of any of these.
//!   - `vRANGE`: versions in which the field is on the wire. RANGE is `N+`, `N-M` or `N`.
//!   - `null=RANGE`: versions in which the field may be null; the Rust type becomes `Option<T>`
//!     (`records` fields are always `Option<Records>`).
//!   - `tag=N`: a tagged field (KIP-482) with tag N, present in flexible versions within its
//!     version range; written only when it differs from its default.
//!   - `default=VALUE`: the value of `Default` (and the "absent" value of tagged fields):
//!     an integer literal, `true`/`false`, `null`, or a quoted string. Without it: zero,
//!     false, empty string/bytes/array, nil UUID, default struct; a nullable field without
//!     `default=null` defaults to an empty (non-null) value.
//!
//! Field facts (names, types, version ranges, nullability, tags, defaults) follow Apache
//! Kafka's message definitions (clients/src/main/resources/common/message/*.json) as of Kafka
//! 4.4.0; `tools/check_against_kafka_jar.py` verifies every file, version by version, against
//! the schemas compiled into that release's kafka-clients jar. Version ranges are Kafka's stable
//! ranges (a latest version Kafka marks unstable is left out).
//!
//! # Generated code
//!
//! One module per schema file. Per struct: the struct (fields in schema order, plus
//! `unknown_tagged_fields` when the message has flexible versions), `Default`, `Encode`, `Decode`
//! and, under `cfg(test)`, `Sample` (a filled-in value for tests). After the modules: re-exports
//! of the message types, `RequestBody`/`ResponseBody` (one variant per API, key order) with
//! `From` impls, `supported_versions`, the per-API flexible-version tables and
//! `IMPLEMENTED_APIS`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

#[path = "build/generated_extras.rs"]
mod generated_extras;
use generated_extras::{differs_from_default, gen_struct_extras, response_accessors};

#[derive(Clone, Copy, Debug)]
struct Range {
    lo: i16,
    hi: i16, // i16::MAX for open
}

impl Range {
    fn parse(s: &str) -> Range {
        if s == "none" {
            return Range {
                lo: i16::MAX,
                hi: -1,
            };
        }
        if let Some(lo) = s.strip_suffix('+') {
            return Range {
                lo: lo.parse().expect("range"),
                hi: i16::MAX,
            };
        }
        if let Some((a, b)) = s.split_once('-') {
            return Range {
                lo: a.parse().expect("range"),
                hi: b.parse().expect("range"),
            };
        }
        let v = s.parse().expect("range");
        Range { lo: v, hi: v }
    }
    fn show(&self) -> String {
        if self.hi == i16::MAX {
            format!("{}+", self.lo)
        } else if self.lo == self.hi {
            format!("{}", self.lo)
        } else {
            format!("{}-{}", self.lo, self.hi)
        }
    }
    /// Condition (Rust expression) that `version` lies in this range, given the message's own
    /// valid range `within` (a condition that always holds becomes `None`).
    fn cond(&self, within: Range) -> Option<String> {
        let lo = self.lo > within.lo;
        let hi = self.hi < within.hi;
        match (lo, hi) {
            (false, false) => None,
            (true, false) => Some(format!("version >= {}", self.lo)),
            (false, true) => Some(format!("version <= {}", self.hi)),
            (true, true) if self.lo == self.hi => Some(format!("version == {}", self.lo)),
            (true, true) => Some(format!("({}..={}).contains(&version)", self.lo, self.hi)),
        }
    }
    fn covers(&self, other: Range, within: Range) -> bool {
        self.lo.max(within.lo) <= other.lo.max(within.lo)
            && self.hi.min(within.hi) >= other.hi.min(within.hi)
    }
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    ty: String,
    versions: Range,
    nullable: Option<Range>,
    tag: Option<u32>,
    default: Option<String>,
}

#[derive(Clone, Debug)]
struct Struct {
    name: String,
    fields: Vec<Field>,
}

#[derive(Clone, Debug)]
struct Message {
    module: String,
    kind: String,
    name: String,
    key: i16,
    versions: Range,
    flexible: Range,
    structs: Vec<Struct>, // first is the message itself
}

fn parse(module: &str, text: &str) -> Message {
    let mut msg = Message {
        module: module.to_string(),
        kind: String::new(),
        name: String::new(),
        key: -1,
        versions: Range { lo: 0, hi: 0 },
        flexible: Range::parse("none"),
        structs: Vec::new(),
    };
    for (lineno, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        let err = |what: &str| -> ! { panic!("{module}.schema:{}: {what}: {raw}", lineno + 1) };
        if !line.starts_with(' ') {
            match toks[0] {
                "request" | "response" => {
                    msg.kind = toks[0].to_string();
                    msg.name = toks[1].to_string();
                    for kv in &toks[2..] {
                        let (k, v) = kv
                            .split_once('=')
                            .unwrap_or_else(|| err("expected key=value"));
                        match k {
                            "key" => msg.key = v.parse().unwrap_or_else(|_| err("bad key")),
                            "versions" => msg.versions = Range::parse(v),
                            "flexible" => msg.flexible = Range::parse(v),
                            _ => err("unknown attribute"),
                        }
                    }
                    msg.structs.push(Struct {
                        name: msg.name.clone(),
                        fields: vec![],
                    });
                }
                "struct" => msg.structs.push(Struct {
                    name: toks[1].to_string(),
                    fields: vec![],
                }),
                _ => err("expected request, response or struct"),
            }
            continue;
        }
        let st = msg
            .structs
            .last_mut()
            .unwrap_or_else(|| err("field before header"));
        if toks.len() < 3 || !toks[2].starts_with('v') {
            err("expected name type vRANGE");
        }
        let mut f = Field {
            name: toks[0].to_string(),
            ty: toks[1].to_string(),
            versions: Range::parse(&toks[2][1..]),
            nullable: None,
            tag: None,
            default: None,
        };
        for kv in &toks[3..] {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| err("expected key=value"));
            match k {
                "null" => f.nullable = Some(Range::parse(v)),
                "tag" => f.tag = Some(v.parse().unwrap_or_else(|_| err("bad tag"))),
                "default" => f.default = Some(v.to_string()),
                _ => err("unknown attribute"),
            }
        }
        st.fields.push(f);
    }
    assert!(
        !msg.kind.is_empty(),
        "{module}.schema: no request/response header"
    );
    msg
}

const KEYWORDS: &[&str] = &[
    "type", "match", "move", "ref", "self", "static", "struct", "use", "where", "loop", "fn",
    "mod", "in",
];

fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

fn prim_rust(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "bool" => "bool",
        "int8" => "i8",
        "int16" => "i16",
        "int32" => "i32",
        "int64" => "i64",
        "uint16" => "u16",
        "float64" => "f64",
        "string" => "String",
        "bytes" => "Bytes",
        "records" => "Records",
        "uuid" => "Uuid",
        _ => return None,
    })
}

fn elem_rust(ty: &str) -> String {
    prim_rust(ty)
        .map(str::to_string)
        .unwrap_or_else(|| ty.to_string())
}

fn is_option(f: &Field) -> bool {
    f.nullable.is_some() || f.ty == "records"
}

fn rust_type(f: &Field) -> String {
    let base = match f.ty.strip_prefix("[]") {
        Some(e) => format!("Vec<{}>", elem_rust(e)),
        None => elem_rust(&f.ty),
    };
    if is_option(f) {
        format!("Option<{base}>")
    } else {
        base
    }
}

fn default_expr(f: &Field) -> String {
    let d = f.default.as_deref();
    if is_option(f) && d == Some("null") {
        return "None".into();
    }
    let inner = match f.ty.strip_prefix("[]") {
        Some(_) => "Vec::new()".to_string(),
        None => match f.ty.as_str() {
            "bool" => d.unwrap_or("false").to_string(),
            "int8" | "int16" | "int32" | "int64" | "uint16" => d.unwrap_or("0").to_string(),
            "float64" => d
                .map(|v| {
                    if v.contains('.') {
                        v.to_string()
                    } else {
                        format!("{v}.0")
                    }
                })
                .unwrap_or("0.0".into()),
            "string" => match d {
                Some(s) if s.len() >= 2 && s.starts_with('"') && s != "\"\"" => {
                    format!("String::from({s})")
                }
                _ => "String::new()".into(),
            },
            "bytes" => "Bytes::new()".into(),
            "records" => "Records::default()".into(),
            "uuid" => "Uuid::nil()".into(),
            other => format!("{other}::default()"),
        },
    };
    if is_option(f) {
        format!("Some({inner})")
    } else {
        inner
    }
}

/// Closure encoding one array element `e: &T`.
fn elem_encoder(ty: &str) -> String {
    match ty {
        "bool" => "|enc, e| { enc.put_bool(*e); Ok(()) }".into(),
        "int8" => "|enc, e| { enc.put_i8(*e); Ok(()) }".into(),
        "int16" => "|enc, e| { enc.put_i16(*e); Ok(()) }".into(),
        "int32" => "|enc, e| { enc.put_i32(*e); Ok(()) }".into(),
        "int64" => "|enc, e| { enc.put_i64(*e); Ok(()) }".into(),
        "uint16" => "|enc, e| { enc.put_u16(*e); Ok(()) }".into(),
        "float64" => "|enc, e| { enc.put_f64(*e); Ok(()) }".into(),
        "uuid" => "|enc, e| { enc.put_uuid(e); Ok(()) }".into(),
        "string" => "|enc, e| enc.put_string(e, flexible)".into(),
        "bytes" => "|enc, e| enc.put_bytes(e, flexible)".into(),
        _ => "|enc, e| e.encode(enc, version)".into(),
    }
}

fn elem_decoder(ty: &str) -> String {
    match ty {
        "bool" => "get_bool".into(),
        "int8" => "get_i8".into(),
        "int16" => "get_i16".into(),
        "int32" => "get_i32".into(),
        "int64" => "get_i64".into(),
        "uint16" => "get_u16".into(),
        "float64" => "get_f64".into(),
        "uuid" => "get_uuid".into(),
        "string" => "|buf| get_string(buf, flexible)".into(),
        "bytes" => "|buf| get_bytes(buf, flexible)".into(),
        other => format!("|buf| {other}::decode(buf, version)"),
    }
}

/// Statement encoding field `f` (value `self.<name>`).
fn encode_stmt(f: &Field, st: &str, within: Range) -> String {
    let name = ident(&f.name);
    let v = format!("self.{name}");
    let what = format!("{st}.{}", f.name);
    // (nullable form, non-null form taking `x` as the unwrapped value)
    let nullable_always = f
        .nullable
        .map(|n| n.covers(f.versions, within))
        .unwrap_or(false);
    let pair = |nullable: String, non_null: String| -> String {
        if f.nullable.is_none() && f.ty != "records" {
            return non_null.replace("{x}", &format!("&{v}"));
        }
        if nullable_always {
            return nullable;
        }
        let method = if matches!(f.ty.as_str(), "string" | "bytes") {
            "as_deref"
        } else {
            "as_ref"
        };
        let unwrap = format!("{v}.{method}().ok_or(EncodeError::NullNotAllowed(\"{what}\"))?");
        let nn = non_null.replace("{x}", &unwrap);
        match f.nullable.and_then(|n| n.cond(within)) {
            Some(c) if f.nullable.is_some() => format!("if {c} {{ {nullable} }} else {{ {nn} }}"),
            _ => nn,
        }
    };
    if let Some(e) = f.ty.strip_prefix("[]") {
        let cl = elem_encoder(e);
        if !is_option(f) {
            return format!("enc.put_array(&{v}, flexible, {cl})?;");
        }
        let nullable = format!("enc.put_nullable_array({v}.as_deref(), flexible, {cl})?;");
        if nullable_always {
            return nullable;
        }
        let nn = format!(
            "enc.put_array({v}.as_deref().ok_or(EncodeError::NullNotAllowed(\"{what}\"))?, flexible, {cl})?;"
        );
        return match f.nullable.and_then(|n| n.cond(within)) {
            Some(c) => format!("if {c} {{ {nullable} }} else {{ {nn} }}"),
            None => nn,
        };
    }
    match f.ty.as_str() {
        "bool" => format!("enc.put_bool({v});"),
        "int8" => format!("enc.put_i8({v});"),
        "int16" => format!("enc.put_i16({v});"),
        "int32" => format!("enc.put_i32({v});"),
        "int64" => format!("enc.put_i64({v});"),
        "uint16" => format!("enc.put_u16({v});"),
        "float64" => format!("enc.put_f64({v});"),
        "uuid" => format!("enc.put_uuid(&{v});"),
        "string" => pair(
            format!("enc.put_nullable_string({v}.as_deref(), flexible)?;"),
            "enc.put_string({x}, flexible)?;".into(),
        ),
        "bytes" => pair(
            format!("enc.put_nullable_bytes({v}.as_deref(), flexible)?;"),
            "enc.put_bytes({x}, flexible)?;".into(),
        ),
        "records" => pair(
            format!("enc.put_nullable_records({v}.as_ref(), flexible)?;"),
            "enc.put_nullable_records(Some({x}), flexible)?;".into(),
        ),
        // Nullable struct: INT8 -1 for null, 1 then the struct otherwise.
        _ if f.nullable.is_some() => pair(
            format!("match &{v} {{ None => enc.put_i8(-1), Some(x) => {{ enc.put_i8(1); x.encode(enc, version)?; }} }}"),
            "enc.put_i8(1); {x}.encode(enc, version)?;".into(),
        ),
        _ => format!("{v}.encode(enc, version)?;"),
    }
}

/// Expression decoding field `f` from `buf`.
fn decode_expr(f: &Field, within: Range) -> String {
    let nullable_always = f
        .nullable
        .map(|n| n.covers(f.versions, within))
        .unwrap_or(false);
    let pair = |nullable: String, non_null: String| -> String {
        if f.nullable.is_none() && f.ty != "records" {
            return non_null;
        }
        if nullable_always {
            return nullable;
        }
        match f.nullable.and_then(|n| n.cond(within)) {
            Some(c) if f.nullable.is_some() => {
                format!("if {c} {{ {nullable} }} else {{ Some({non_null}) }}")
            }
            _ => format!("Some({non_null})"),
        }
    };
    if let Some(e) = f.ty.strip_prefix("[]") {
        let cl = elem_decoder(e);
        return pair(
            format!("get_nullable_array(buf, flexible, {cl})?"),
            format!("get_array(buf, flexible, {cl})?"),
        );
    }
    match f.ty.as_str() {
        "bool" => "get_bool(buf)?".into(),
        "int8" => "get_i8(buf)?".into(),
        "int16" => "get_i16(buf)?".into(),
        "int32" => "get_i32(buf)?".into(),
        "int64" => "get_i64(buf)?".into(),
        "uint16" => "get_u16(buf)?".into(),
        "float64" => "get_f64(buf)?".into(),
        "uuid" => "get_uuid(buf)?".into(),
        "string" => pair(
            "get_nullable_string(buf, flexible)?".into(),
            "get_string(buf, flexible)?".into(),
        ),
        "bytes" => pair(
            "get_nullable_bytes(buf, flexible)?".into(),
            "get_bytes(buf, flexible)?".into(),
        ),
        // records without null= are still Option: pair() wraps them in Some.
        "records" => pair(
            "get_nullable_records(buf, flexible)?".into(),
            "Records::Memory(get_bytes(buf, flexible)?)".into(),
        ),
        other if f.nullable.is_some() => pair(
            format!(
                "if get_i8(buf)? < 0 {{ None }} else {{ Some({other}::decode(buf, version)?) }}"
            ),
            format!("{{ get_i8(buf)?; {other}::decode(buf, version)? }}"),
        ),
        other => format!("{other}::decode(buf, version)?"),
    }
}

fn gen_struct(out: &mut String, msg: &Message, st: &Struct, is_top: bool) {
    let within = msg.versions;
    let flex_capable = msg.flexible.lo != i16::MAX;
    if is_top {
        let _ = writeln!(
            out,
            "/// Kafka `{}` (API key {}), versions {}, flexible versions {}.",
            st.name,
            msg.key,
            msg.versions.show(),
            if flex_capable {
                msg.flexible.show()
            } else {
                "none".into()
            }
        );
    } else {
        let _ = writeln!(
            out,
            "/// `{}`: a struct of Kafka's `{}`.",
            st.name, msg.name
        );
    }
    let _ = writeln!(out, "#[derive(Debug, Clone, PartialEq)]");
    let _ = writeln!(out, "pub struct {} {{", st.name);
    for f in &st.fields {
        let mut doc = format!("`{}`: {}, versions {}", f.name, f.ty, f.versions.show());
        if let Some(n) = f.nullable {
            let _ = write!(doc, ", nullable in {}", n.show());
        }
        if let Some(t) = f.tag {
            let _ = write!(doc, ", tagged field {t}");
        }
        if let Some(d) = &f.default {
            let _ = write!(doc, ", default {d}");
        }
        let _ = writeln!(out, "    /// {doc}.");
        let _ = writeln!(out, "    pub {}: {},", ident(&f.name), rust_type(f));
    }
    if flex_capable {
        let _ = writeln!(out, "    /// Tagged fields unknown to this codec, as (tag, raw value): kept on decode, re-encoded.");
        let _ = writeln!(out, "    pub unknown_tagged_fields: Vec<(u32, Bytes)>,");
    }
    let _ = writeln!(out, "}}\n");

    // Default
    let _ = writeln!(
        out,
        "impl Default for {} {{\n    fn default() -> Self {{\n        Self {{",
        st.name
    );
    for f in &st.fields {
        let _ = writeln!(out, "            {}: {},", ident(&f.name), default_expr(f));
    }
    if flex_capable {
        let _ = writeln!(out, "            unknown_tagged_fields: Vec::new(),");
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");

    let tagged: Vec<&Field> = st.fields.iter().filter(|f| f.tag.is_some()).collect();

    // Encode
    let _ = writeln!(out, "impl Encode for {} {{", st.name);
    let _ = writeln!(
        out,
        "    fn encode(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError> {{"
    );
    if flex_capable {
        let _ = writeln!(out, "        let flexible = version >= FLEXIBLE_MIN;");
    } else {
        let _ = writeln!(out, "        let flexible = false;");
    }
    for f in st.fields.iter().filter(|f| f.tag.is_none()) {
        let stmt = encode_stmt(f, &st.name, within);
        match f.versions.cond(within) {
            Some(c) => {
                let _ = writeln!(out, "        if {c} {{ {stmt} }}");
            }
            None => {
                let _ = writeln!(out, "        {stmt}");
            }
        }
    }
    if flex_capable {
        let _ = writeln!(out, "        if flexible {{");
        if tagged.is_empty() {
            let _ = writeln!(
                out,
                "            enc.put_tagged_fields(Vec::new(), &self.unknown_tagged_fields)?;"
            );
        } else {
            let _ = writeln!(
                out,
                "            let mut tagged: Vec<(u32, Bytes)> = Vec::new();"
            );
            for f in &tagged {
                let stmt = encode_stmt(f, &st.name, within);
                let mut cond = differs_from_default(f);
                if let Some(c) = f.versions.cond(within) {
                    cond = format!("{c} && {cond}");
                }
                let _ = writeln!(
                    out,
                    "            if {cond} {{ tagged.push(({}, encode_tagged(|enc| {{ {stmt} Ok(()) }})?)); }}",
                    f.tag.unwrap()
                );
            }
            let _ = writeln!(
                out,
                "            enc.put_tagged_fields(tagged, &self.unknown_tagged_fields)?;"
            );
        }
        let _ = writeln!(out, "        }}");
    }
    let _ = writeln!(
        out,
        "        let _ = (flexible, version);\n        Ok(())\n    }}\n}}\n"
    );

    // Decode
    let _ = writeln!(out, "impl Decode for {} {{", st.name);
    let _ = writeln!(
        out,
        "    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError> {{"
    );
    if flex_capable {
        let _ = writeln!(out, "        let flexible = version >= FLEXIBLE_MIN;");
    } else {
        let _ = writeln!(out, "        let flexible = false;");
    }
    let _ = writeln!(out, "        let mut this = Self::default();");
    for f in st.fields.iter().filter(|f| f.tag.is_none()) {
        let e = decode_expr(f, within);
        let name = ident(&f.name);
        match f.versions.cond(within) {
            Some(c) => {
                let _ = writeln!(out, "        if {c} {{ this.{name} = {e}; }}");
            }
            None => {
                let _ = writeln!(out, "        this.{name} = {e};");
            }
        }
    }
    if flex_capable {
        let _ = writeln!(out, "        if flexible {{");
        let _ = writeln!(out, "            let n = get_tagged_count(buf)?;");
        let _ = writeln!(out, "            let mut last = None;");
        let _ = writeln!(out, "            for _ in 0..n {{");
        if tagged.is_empty() {
            let _ = writeln!(
                out,
                "                let field = get_tagged_field(buf, &mut last)?;"
            );
            let _ = writeln!(
                out,
                "                this.unknown_tagged_fields.push(field);"
            );
        } else {
            let _ = writeln!(
                out,
                "                let (tag, mut data) = get_tagged_field(buf, &mut last)?;"
            );
            let _ = writeln!(out, "                match tag {{");
            for f in &tagged {
                let e = decode_expr(f, within);
                let guard = f
                    .versions
                    .cond(within)
                    .map(|c| format!(" if {c}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "                    {}{guard} => {{ let buf = &mut data; this.{} = {e}; expect_empty(buf, \"{}.{}\")?; }}",
                    f.tag.unwrap(),
                    ident(&f.name),
                    st.name,
                    f.name
                );
            }
            let _ = writeln!(
                out,
                "                    _ => this.unknown_tagged_fields.push((tag, data)),"
            );
            let _ = writeln!(out, "                }}");
        }
        let _ = writeln!(out, "            }}\n        }}");
    }
    let _ = writeln!(
        out,
        "        let _ = (flexible, version);\n        Ok(this)\n    }}\n}}\n"
    );
}

fn gen_message(out: &mut String, msg: &Message) {
    let _ = writeln!(out, "pub mod {} {{", msg.module);
    let _ = writeln!(
        out,
        "    //! Kafka `{}` (API key {}), versions {}. Generated from `schema/{}.schema`.",
        msg.name,
        msg.key,
        msg.versions.show(),
        msg.module
    );
    // Generated code is uniform on purpose: every struct spells out its spec defaults
    // (derivable_impls), decode assigns field by field under per-version conditions
    // (field_reassign_with_default), tagged fields compare against their default whatever the
    // type (bool_comparison, partialeq_to_none), and not every module needs every import.
    let _ = writeln!(
        out,
        "    #![allow(unused_imports, clippy::derivable_impls, clippy::field_reassign_with_default, clippy::bool_comparison, clippy::partialeq_to_none)]"
    );
    let _ = writeln!(out, "    use crate::codec::*;\n    use crate::record::Records;\n    use bytes::Bytes;\n    use uuid::Uuid;\n");
    let _ = writeln!(
        out,
        "    /// Kafka API key.\n    pub const API_KEY: i16 = {};",
        msg.key
    );
    let _ = writeln!(
        out,
        "    /// Lowest version this codec supports.\n    pub const MIN_VERSION: i16 = {};",
        msg.versions.lo
    );
    let _ = writeln!(
        out,
        "    /// Highest version this codec supports.\n    pub const MAX_VERSION: i16 = {};",
        msg.versions.hi
    );
    if msg.flexible.lo != i16::MAX {
        let _ = writeln!(
            out,
            "    /// First flexible version (compact encodings and tagged fields, KIP-482).\n    pub const FLEXIBLE_MIN: i16 = {};\n",
            msg.flexible.lo
        );
    } else {
        let _ = writeln!(out, "    /// This message has no flexible versions.\n    pub const FLEXIBLE_MIN: i16 = i16::MAX;\n");
    }
    let mut body = String::new();
    for (i, st) in msg.structs.iter().enumerate() {
        gen_struct(&mut body, msg, st, i == 0);
        gen_struct_extras(&mut body, msg, st);
    }
    for line in body.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    let _ = writeln!(out, "}}\n");
}

fn api_name(msg: &Message) -> String {
    msg.name
        .trim_end_matches("Request")
        .trim_end_matches("Response")
        .to_string()
}

/// Every `schema/*.schema` file parsed, in file-name order (each a rerun trigger; dir found at run time, not `env!`).
fn read_schemas() -> Vec<Message> {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("schema");
    println!("cargo:rerun-if-changed=schema");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("schema dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().map(|e| e == "schema").unwrap_or(false))
        .collect();
    files.sort();
    let mut msgs = Vec::new();
    for p in &files {
        println!("cargo:rerun-if-changed={}", p.display());
        let module = p.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(p).expect("read schema");
        msgs.push(parse(&module, &text));
    }
    msgs
}

fn main() {
    let msgs = read_schemas();
    let mut out = String::new();
    out.push_str("// @generated by crates/protocol/build.rs from crates/protocol/schema/*.schema. Do not edit.\n\n");
    for m in &msgs {
        gen_message(&mut out, m);
    }
    for m in &msgs {
        let _ = writeln!(out, "pub use {}::{};", m.module, m.name);
    }
    // Pair requests with responses by API key.
    let mut apis: BTreeMap<i16, (Option<&Message>, Option<&Message>)> = BTreeMap::new();
    for m in &msgs {
        let e = apis.entry(m.key).or_default();
        if m.kind == "request" {
            e.0 = Some(m);
        } else {
            e.1 = Some(m);
        }
    }
    let pairs: Vec<(&Message, &Message)> = apis
        .values()
        .map(|(q, r)| {
            (
                q.expect("request schema missing"),
                r.expect("response schema missing"),
            )
        })
        .collect();

    for (kind, idx) in [("Request", 0usize), ("Response", 1usize)] {
        let lower = kind.to_lowercase();
        let _ = writeln!(
            out,
            "\n/// A decoded {lower} body, one variant per supported API."
        );
        let _ = writeln!(out, "#[derive(Debug, Clone, PartialEq)]\n#[allow(clippy::large_enum_variant)]\npub enum {kind}Body {{");
        for (q, r) in &pairs {
            let m = if idx == 0 { q } else { r };
            let _ = writeln!(
                out,
                "    /// {} (API key {}).\n    {}({}),",
                m.name,
                m.key,
                api_name(m),
                m.name
            );
        }
        let _ = writeln!(out, "}}\n");
        for (q, r) in &pairs {
            let m = if idx == 0 { q } else { r };
            let _ = writeln!(
                out,
                "impl From<{n}> for {kind}Body {{\n    fn from(b: {n}) -> Self {{\n        Self::{v}(b)\n    }}\n}}\n",
                n = m.name,
                v = api_name(q)
            );
        }
        let _ = writeln!(out, "impl {kind}Body {{");
        let _ = writeln!(out, "    /// The API this body belongs to.\n    pub fn api_key(&self) -> ApiKey {{\n        match self {{");
        for (q, _) in &pairs {
            let _ = writeln!(
                out,
                "            Self::{n}(_) => ApiKey::{n},",
                n = api_name(q)
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n");
        if idx == 1 {
            response_accessors(&mut out, &pairs);
        }
        let _ = writeln!(
            out,
            "    /// Decode the body of `api_key` in `version` (range-checked against [`supported_versions`]).\n    pub fn decode(api_key: ApiKey, version: i16, buf: &mut Bytes) -> Result<Self, DecodeError> {{"
        );
        let _ = writeln!(out, "        match supported_versions(api_key) {{\n            Some((lo, hi)) if (lo..=hi).contains(&version) => {{}}\n            Some(_) => return Err(DecodeError::UnsupportedVersion {{ api_key: api_key as i16, version }}),\n            None => return Err(DecodeError::UnsupportedApiKey(api_key as i16)),\n        }}");
        let _ = writeln!(out, "        Ok(match api_key {{");
        for (q, r) in &pairs {
            let m = if idx == 0 { q } else { r };
            let _ = writeln!(
                out,
                "            ApiKey::{} => Self::{}({}::decode(buf, version)?),",
                api_name(q),
                api_name(q),
                m.name
            );
        }
        let _ = writeln!(out, "            _ => return Err(DecodeError::UnsupportedApiKey(api_key as i16)),\n        }})\n    }}\n");
        let _ = writeln!(out, "    /// Encode the body in `version` (range-checked against [`supported_versions`]).\n    pub fn encode(&self, enc: &mut Encoder, version: i16) -> Result<(), EncodeError> {{");
        let _ = writeln!(out, "        let key = self.api_key();\n        match supported_versions(key) {{\n            Some((lo, hi)) if (lo..=hi).contains(&version) => {{}}\n            _ => return Err(EncodeError::UnsupportedVersion {{ api_key: key as i16, version }}),\n        }}");
        let _ = writeln!(out, "        match self {{");
        for (q, _) in &pairs {
            let _ = writeln!(
                out,
                "            Self::{}(b) => b.encode(enc, version),",
                api_name(q)
            );
        }
        let _ = writeln!(out, "        }}\n    }}\n}}\n");
    }

    for (kind, idx) in [("Request", 0usize), ("Response", 1usize)] {
        let _ = writeln!(
            out,
            "/// A sample {kind} body for tests: every field valid in `version` set."
        );
        let _ = writeln!(
            out,
            "#[cfg(test)]\npub(crate) fn sample_{}(api_key: ApiKey, version: i16, s: &mut crate::sample::Seq) -> Option<{kind}Body> {{",
            kind.to_lowercase()
        );
        let _ = writeln!(
            out,
            "    use crate::sample::Sample;\n    Some(match api_key {{"
        );
        for (q, r) in &pairs {
            let m = if idx == 0 { q } else { r };
            let _ = writeln!(
                out,
                "        ApiKey::{} => {kind}Body::{}({}::sample(version, s)),",
                api_name(q),
                api_name(q),
                m.name
            );
        }
        let _ = writeln!(out, "        _ => return None,\n    }})\n}}\n");
    }
    let _ = writeln!(out, "/// Versions of `api_key` this codec can decode and encode, both ways: `(min, max)`, or `None`\n/// for an API it does not implement.");
    let _ = writeln!(
        out,
        "pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {{\n    match api_key {{"
    );
    for (q, r) in &pairs {
        let lo = q.versions.lo.max(r.versions.lo);
        let hi = q.versions.hi.min(r.versions.hi);
        let _ = writeln!(
            out,
            "        ApiKey::{} => Some(({lo}, {hi})),",
            api_name(q)
        );
    }
    let _ = writeln!(out, "        _ => None,\n    }}\n}}\n");
    for (kind, idx) in [("request", 0usize), ("response", 1usize)] {
        let _ = writeln!(out, "/// First flexible {kind} version of `api_key`, if the codec knows the API and it has one.");
        let _ = writeln!(out, "pub(crate) fn {kind}_flexible_min(api_key: ApiKey) -> Option<i16> {{\n    match api_key {{");
        for (q, r) in &pairs {
            let m = if idx == 0 { q } else { r };
            if m.flexible.lo != i16::MAX {
                let _ = writeln!(
                    out,
                    "        ApiKey::{} => Some({}),",
                    api_name(q),
                    m.flexible.lo
                );
            }
        }
        let _ = writeln!(out, "        _ => None,\n    }}\n}}\n");
    }
    let _ = writeln!(out, "/// Every API this codec implements, in API key order.\npub const IMPLEMENTED_APIS: &[ApiKey] = &[");
    for (q, _) in &pairs {
        let _ = writeln!(out, "    ApiKey::{},", api_name(q));
    }
    let _ = writeln!(out, "];");

    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("messages.rs"), out).expect("write messages.rs");
}
