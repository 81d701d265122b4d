//! Parts of `build.rs`'s generator kept apart for size: the sample values of every struct (for the
//! codec's round-trip tests), `ResponseBody::throttle_time_ms_mut`, the error-code visitor of every response
//! struct (`visit_error_codes`, `ResponseBody::visit_error_codes`) and when a tagged field is written.

use std::fmt::Write as _;

use super::{api_name, default_expr, ident, is_option, prim_rust, Field, Message, Range, Struct};

/// Expression producing a sample (non-default where possible) value for one element of type `ty`.
fn sample_elem(ty: &str) -> String {
    match ty {
        "bool" => "s.bool()".into(),
        "int8" => "s.i8()".into(),
        "int16" => "s.i16()".into(),
        "int32" => "s.i32()".into(),
        "int64" => "s.i64()".into(),
        "uint16" => "s.u16()".into(),
        "float64" => "s.f64()".into(),
        "uuid" => "s.uuid()".into(),
        "string" => "s.string()".into(),
        "bytes" => "s.bytes()".into(),
        "records" => "Records::Memory(s.bytes())".into(),
        other => format!("{other}::sample(version, s)"),
    }
}

fn sample_expr(f: &Field, within: Range) -> String {
    let inner = match f.ty.strip_prefix("[]") {
        Some(e) => format!("s.vec(|s| {})", sample_elem(e)),
        None => sample_elem(&f.ty),
    };
    if !is_option(f) {
        return inner;
    }
    let nullable = match f.nullable {
        None => "false".to_string(),
        Some(n) if n.covers(f.versions, within) => "true".to_string(),
        Some(n) => n.cond(within).unwrap_or_else(|| "true".into()),
    };
    format!("if s.null({nullable}) {{ None }} else {{ Some({inner}) }}")
}

fn gen_sample(out: &mut String, msg: &Message, st: &Struct) {
    let within = msg.versions;
    let flex_capable = msg.flexible.lo != i16::MAX;
    let _ = writeln!(
        out,
        "#[cfg(test)]\nimpl crate::sample::Sample for {} {{",
        st.name
    );
    let _ = writeln!(
        out,
        "    fn sample(version: i16, s: &mut crate::sample::Seq) -> Self {{"
    );
    let _ = writeln!(out, "        let mut this = Self::default();");
    for f in &st.fields {
        let e = sample_expr(f, within);
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
        let _ = writeln!(out, "        if version >= FLEXIBLE_MIN {{ this.unknown_tagged_fields = s.unknown_tagged_fields(); }}");
    }
    let _ = writeln!(out, "        let _ = version;\n        this\n    }}\n}}\n");
}

/// `ResponseBody::throttle_time_ms_mut`: the response's `throttle_time_ms` field, where its message has one.
fn throttle_accessor(out: &mut String, pairs: &[(&Message, &Message)]) {
    let _ = writeln!(out, "    /// The response's `throttle_time_ms` (ms, KIP-219; sent from the version that has it), `None` for a\n    /// response without one (SaslHandshake, SaslAuthenticate, WriteTxnMarkers).\n    pub fn throttle_time_ms_mut(&mut self) -> Option<&mut i32> {{\n        match self {{");
    for (q, r) in pairs {
        let has = r.structs[0]
            .fields
            .iter()
            .any(|f| f.name == "throttle_time_ms");
        let arm = if has {
            "Some(&mut b.throttle_time_ms)"
        } else {
            "None"
        };
        let bind = if has { "b" } else { "_" };
        let _ = writeln!(out, "            Self::{}({bind}) => {arm},", api_name(q));
    }
    let _ = writeln!(out, "        }}\n    }}\n");
}

/// The condition under which tagged field `f` is written: its value differs from its default. An array
/// is compared by emptiness (`!= Vec::new()` leaves the element type to inference, which Uuid's two
/// `PartialEq` impls defeat).
pub(super) fn differs_from_default(f: &Field) -> String {
    if f.ty.starts_with("[]") && !is_option(f) {
        format!("!self.{}.is_empty()", ident(&f.name))
    } else {
        format!("self.{} != {}", ident(&f.name), default_expr(f))
    }
}

/// `visit_error_codes` of a response struct: calls `f` with its own `error_code` (an int16 of that name) and
/// those of every struct it holds, depth first — what Kafka's `AbstractResponse.errorCounts` counts.
fn error_visitor(out: &mut String, msg: &Message, st: &Struct) {
    if msg.kind != "response" {
        return;
    }
    let _ = writeln!(out, "impl {} {{", st.name);
    let _ = writeln!(out, "    /// Calls `f` with every `error_code` of this struct and the structs it holds (Kafka's\n    /// `errorCounts`).\n    pub fn visit_error_codes(&self, f: &mut dyn FnMut(i16)) {{");
    for fl in &st.fields {
        let name = ident(&fl.name);
        if fl.name == "error_code" && fl.ty == "int16" {
            let _ = writeln!(out, "        f(self.{name});");
            continue;
        }
        let (elem, array) = match fl.ty.strip_prefix("[]") {
            Some(e) => (e, true),
            None => (fl.ty.as_str(), false),
        };
        if prim_rust(elem).is_some() {
            continue;
        }
        let visit = match array {
            true => "for e in v { e.visit_error_codes(f); }",
            false => "v.visit_error_codes(f);",
        };
        match is_option(fl) {
            true => {
                let _ = writeln!(out, "        if let Some(v) = &self.{name} {{ {visit} }}");
            }
            false => {
                let _ = writeln!(out, "        {{ let v = &self.{name}; {visit} }}");
            }
        }
    }
    let _ = writeln!(out, "        let _ = f;\n    }}\n}}\n");
}

/// `ResponseBody::visit_error_codes`: the body's struct visitor.
fn error_visitor_dispatch(out: &mut String, pairs: &[(&Message, &Message)]) {
    let _ = writeln!(out, "    /// Calls `f` with every `error_code` in the response (top level and nested, Kafka's `errorCounts`).\n    pub fn visit_error_codes(&self, f: &mut dyn FnMut(i16)) {{\n        match self {{");
    for (q, _) in pairs {
        let _ = writeln!(
            out,
            "            Self::{}(b) => b.visit_error_codes(f),",
            api_name(q)
        );
    }
    let _ = writeln!(out, "        }}\n    }}\n");
}

/// What every struct of `msg` gets besides its codec: its sample value and, in a response, its error-code
/// visitor.
pub(super) fn gen_struct_extras(out: &mut String, msg: &Message, st: &Struct) {
    gen_sample(out, msg, st);
    error_visitor(out, msg, st);
}

/// The `ResponseBody` accessors: `throttle_time_ms_mut` and `visit_error_codes`.
pub(super) fn response_accessors(out: &mut String, pairs: &[(&Message, &Message)]) {
    throttle_accessor(out, pairs);
    error_visitor_dispatch(out, pairs);
}
