//! The principal of a TLS client: the certificate's subject as an RFC 2253 distinguished name (what
//! Java's `X500Principal.getName()` gives Kafka), mapped by `ssl.principal.mapping.rules` (KIP-371).
//!
//! Rule syntax (Kafka's `SslPrincipalMapper`): a comma-separated list of `DEFAULT` (the DN unchanged) and
//! `RULE:pattern/replacement/[L|U]` (when `pattern` matches the whole DN, the DN with the pattern replaced by
//! `replacement` — `$1`... are the pattern's groups — then lower- or upper-cased). `/` and `\` inside a
//! pattern or replacement are escaped with `\`. The first rule that applies wins; when none does, the
//! connection is refused. Patterns are Rust `regex` syntax, which agrees with Java's for the patterns such
//! rules use (no look-around or back-references).

use regex::Regex;
use x509_parser::asn1_rs::ToDer;
use x509_parser::prelude::{FromDer, X509Certificate};

/// A parsed `ssl.principal.mapping.rules` value.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        /// The pattern anchored at both ends (Java's `matches()`).
        whole: Regex,
        /// The pattern as given (for the replacement, Java's `replaceAll`).
        pattern: Regex,
        /// The replacement in `regex`'s syntax (`${1}`, `$$`).
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// Why a rule list or a mapping failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalError {
    /// The rule text does not parse (Kafka's messages).
    #[error("{0}")]
    InvalidRule(String),
    /// No rule applies to the DN: the client is refused.
    #[error("No rules apply to {0}")]
    NoMatchingRule(String),
    /// The client certificate does not parse.
    #[error("bad client certificate: {0}")]
    BadCertificate(String),
}

impl PrincipalMapper {
    /// Parses a rule list (`DEFAULT` when empty). Errors: Kafka's "Invalid rule" messages, or a pattern
    /// `regex` does not accept.
    pub fn parse(text: &str) -> Result<PrincipalMapper, PrincipalError> {
        let mut rules = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (rule, after) = parse_one(rest)?;
            rules.extend(rule);
            rest = after.trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r.trim_start();
            } else if !rest.is_empty() {
                return Err(PrincipalError::InvalidRule(format!(
                    "Invalid rule: `{text}`, unmatched substring: `{rest}`"
                )));
            }
        }
        if text.trim().is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name for distinguished name `dn`. Errors: [`PrincipalError::NoMatchingRule`].
    pub fn name(&self, dn: &str) -> Result<String, PrincipalError> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Replace {
                    whole,
                    pattern,
                    replacement,
                    case,
                } if whole.is_match(dn) => {
                    let out = pattern.replace_all(dn, replacement.as_str()).into_owned();
                    return Ok(match case {
                        Case::Keep => out,
                        Case::Lower => out.to_lowercase(),
                        Case::Upper => out.to_uppercase(),
                    });
                }
                Rule::Replace { .. } => {}
            }
        }
        Err(PrincipalError::NoMatchingRule(dn.to_string()))
    }
}

/// Parses one rule at the start of `text`; returns it (`None` for an empty rule) and the rest.
fn parse_one(text: &str) -> Result<(Option<Rule>, &str), PrincipalError> {
    if let Some(rest) = text.strip_prefix("DEFAULT") {
        return Ok((Some(Rule::Default), rest));
    }
    if text.starts_with(',') {
        return Ok((None, text));
    }
    let invalid = || PrincipalError::InvalidRule(format!("Invalid rule: {text}"));
    let rest = text.strip_prefix("RULE:").ok_or_else(invalid)?;
    let (pattern, rest) = until_slash(rest).ok_or_else(invalid)?;
    let (replacement, rest) = until_slash(rest).ok_or_else(invalid)?;
    let (case, rest) = match rest.as_bytes().first() {
        Some(b'L') => (Case::Lower, &rest[1..]),
        Some(b'U') => (Case::Upper, &rest[1..]),
        _ => (Case::Keep, rest),
    };
    let bad_regex = |e: regex::Error| PrincipalError::InvalidRule(format!("Invalid rule: {e}"));
    let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(bad_regex)?;
    let compiled = Regex::new(pattern).map_err(bad_regex)?;
    let groups = compiled.captures_len() - 1;
    let rule = Rule::Replace {
        whole,
        pattern: compiled,
        replacement: java_replacement(replacement, groups),
        case,
    };
    Ok((Some(rule), rest))
}

/// Splits `text` at its first unescaped `/`: (before, after the slash). `None` without one.
fn until_slash(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'/' => return Some((&text[..i], &text[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// Converts a Java replacement string (`$1`, `\x` escapes) to `regex`'s (`${1}`, `$$`). A group reference
/// beyond the pattern's groups is shortened digit by digit, then taken literally (Kafka's rule).
fn java_replacement(text: &str, groups: usize) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let Ok(mut index) = digits.parse::<usize>() else {
                    out.push_str("$$");
                    continue;
                };
                if let Some(rest) = digits.strip_prefix('0') {
                    out.push_str("${0}");
                    out.push_str(rest);
                    continue;
                }
                let mut used = digits.len();
                while index > groups && index >= 10 {
                    index /= 10;
                    used -= 1;
                }
                if index > groups {
                    out.push_str("$$");
                    out.push_str(&digits);
                } else {
                    out.push_str(&format!("${{{index}}}"));
                    out.push_str(&digits[used..]);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The subject of DER certificate `der` as an RFC 2253 distinguished name, as Java's
/// `X500Principal.getName()`: RDNs last to first, joined by `,`; multi-valued RDNs joined by `+`; the
/// keywords CN, C, L, ST, O, OU, STREET, DC, UID, other attribute types as dotted OIDs with `#`-hex values;
/// `,+"\<>;` escaped with `\`, as are a leading `#` or space and a trailing space.
pub fn subject_dn(der: &[u8]) -> Result<String, PrincipalError> {
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| PrincipalError::BadCertificate(e.to_string()))?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            let text = match (keyword, attr.as_str()) {
                (Some(k), Ok(v)) => format!("{k}={}", escape_value(v)),
                (k, _) => {
                    let der = attr.attr_value().to_der_vec().unwrap_or_default();
                    let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                    format!("{}=#{hex}", k.unwrap_or(&oid))
                }
            };
            parts.push(text);
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// RFC 2253 section 2.4 escaping.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rules: &str, dn: &str) -> Result<String, PrincipalError> {
        PrincipalMapper::parse(rules).unwrap().name(dn)
    }

    #[test]
    fn default_keeps_the_dn() {
        let dn = "CN=client,OU=eng,O=Acme,C=US";
        assert_eq!(map("DEFAULT", dn).unwrap(), dn);
        assert_eq!(map("", dn).unwrap(), dn);
    }

    #[test]
    fn rules_apply_in_order_with_groups_and_case() {
        // Kafka's documented example rules (KIP-371).
        let rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT";
        assert_eq!(
            map(rules, "CN=kafka-svc,OU=ServiceUsers,O=Unknown,C=Unknown").unwrap(),
            "kafka-svc"
        );
        assert_eq!(
            map(
                rules,
                "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US"
            )
            .unwrap(),
            "duke@javasoft"
        );
        assert_eq!(map(rules, "OU=JavaSoft,CN=Bob,C=US").unwrap(), "bob");
        assert_eq!(map(rules, "OU=x").unwrap(), "OU=x");
        assert_eq!(map("RULE:^CN=(.*)$/$1/U", "CN=abc").unwrap(), "ABC");
        // A slash in a replacement is escaped; a group beyond the pattern's is literal.
        assert_eq!(map(r"RULE:^CN=(.*)$/a\/$1/", "CN=b").unwrap(), "a/b");
        assert_eq!(map("RULE:^CN=(.*)$/$1@$2/", "CN=b").unwrap(), "b@$2");
        assert_eq!(map("RULE:^CN=(.*)$/$12/", "CN=b").unwrap(), "b2");
    }

    #[test]
    fn no_matching_rule_refuses() {
        assert_eq!(
            map("RULE:^CN=(.*)$/$1/", "OU=x"),
            Err(PrincipalError::NoMatchingRule("OU=x".into()))
        );
    }

    #[test]
    fn bad_rules_are_rejected() {
        for bad in [
            "RULE:abc",
            "RULE:a/b/Lxyz",
            "foo",
            "DEFAULT junk",
            "RULE:(/x/",
        ] {
            assert!(
                matches!(
                    PrincipalMapper::parse(bad),
                    Err(PrincipalError::InvalidRule(_))
                ),
                "{bad}"
            );
        }
        assert!(PrincipalMapper::parse("DEFAULT,,DEFAULT").is_ok());
    }

    #[test]
    fn rfc2253_escaping() {
        assert_eq!(escape_value("a,b+c"), r"a\,b\+c");
        assert_eq!(escape_value("#x "), r"\#x\ ");
        assert_eq!(escape_value(r#"q"<>;\"#), r#"q\"\<\>\;\\"#);
    }
}
