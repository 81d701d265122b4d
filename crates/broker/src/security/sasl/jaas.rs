//! The JAAS-style value of `sasl.jaas.config` as Kafka reads it (`JaasConfig`): one login module entry,
//! `<LoginModule class> <flag> <key>=<value> ... ;`, values quoted (`"..."`, with `\` escaping the next
//! character) or bare words. Source: Kafka's `org.apache.kafka.common.security.JaasConfig` and the broker
//! documentation ("Configuring Kafka Brokers", `listener.name.<l>.<mechanism>.sasl.jaas.config`).

use std::collections::BTreeMap;

/// One parsed login module entry.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasEntry {
    /// The login module class, e.g. `org.apache.kafka.common.security.plain.PlainLoginModule`.
    pub login_module: String,
    /// The control flag (`required`, `requisite`, `sufficient`, `optional`).
    pub flag: String,
    /// The options, in key order.
    pub options: BTreeMap<String, String>,
}

/// Passwords stay out of logs.
impl std::fmt::Debug for JaasEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("flag", &self.flag)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a `sasl.jaas.config` value was refused (Kafka's messages where it has them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    /// Not of the form `<class> <flag> <options> ;`.
    #[error("invalid JAAS config: {0}")]
    Syntax(String),
    /// Kafka allows exactly one login module in `sasl.jaas.config`.
    #[error("JAAS config property contains {0} login modules, should be 1 module")]
    ModuleCount(usize),
}

const FLAGS: &[&str] = &["required", "requisite", "sufficient", "optional"];

/// Parses a `sasl.jaas.config` value holding exactly one login module entry.
pub fn parse(text: &str) -> Result<JaasEntry, JaasError> {
    let tokens = tokenize(text)?;
    let entries: Vec<&[Token]> = tokens
        .split(|t| *t == Token::Semicolon)
        .filter(|e| !e.is_empty())
        .collect();
    if !matches!(tokens.last(), Some(Token::Semicolon)) {
        return Err(JaasError::Syntax("the entry must end with ';'".into()));
    }
    if entries.len() != 1 {
        return Err(JaasError::ModuleCount(entries.len()));
    }
    entry(entries[0])
}

fn entry(tokens: &[Token]) -> Result<JaasEntry, JaasError> {
    let word = |i: usize, what: &str| match tokens.get(i) {
        Some(Token::Word(w)) => Ok(w.clone()),
        _ => Err(JaasError::Syntax(format!("expected the {what}"))),
    };
    let login_module = word(0, "login module class")?;
    let flag = word(1, "control flag")?;
    if !FLAGS.contains(&flag.to_ascii_lowercase().as_str()) {
        return Err(JaasError::Syntax(format!("invalid control flag {flag}")));
    }
    let mut options = BTreeMap::new();
    let mut rest = &tokens[2..];
    while !rest.is_empty() {
        match rest {
            [Token::Word(k), Token::Equals, Token::Word(v) | Token::Quoted(v), tail @ ..] => {
                options.insert(k.clone(), v.clone());
                rest = tail;
            }
            _ => return Err(JaasError::Syntax("expected key=value options".into())),
        }
    }
    Ok(JaasEntry {
        login_module,
        flag,
        options,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

fn tokenize(text: &str) -> Result<Vec<Token>, JaasError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                tokens.push(Token::Equals);
            }
            ';' => {
                chars.next();
                tokens.push(Token::Semicolon);
            }
            '"' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err(JaasError::Syntax("unterminated quoted value".into())),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e) => s.push(e),
                            None => return Err(JaasError::Syntax("dangling '\\'".into())),
                        },
                        Some(o) => s.push(o),
                    }
                }
                tokens.push(Token::Quoted(s));
            }
            _ => {
                let mut s = String::new();
                while let Some(&o) = chars.peek() {
                    if o.is_whitespace() || o == '=' || o == ';' || o == '"' {
                        break;
                    }
                    s.push(o);
                    chars.next();
                }
                tokens.push(Token::Word(s));
            }
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafkas_plain_server_entry() {
        let e = parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret" user_admin="admin-secret"
               user_alice="a \"quoted\" pw=;" ;"#,
        )
        .unwrap();
        assert_eq!(
            e.login_module,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(e.flag, "required");
        assert_eq!(e.options["username"], "admin");
        assert_eq!(e.options["user_alice"], "a \"quoted\" pw=;");
        assert!(!format!("{e:?}").contains("admin-secret"));
        let bare = parse("M optional debug=true;").unwrap();
        assert_eq!(bare.options["debug"], "true");
    }

    #[test]
    fn refuses_bad_syntax_and_several_modules() {
        assert_eq!(
            parse("A required; B required;"),
            Err(JaasError::ModuleCount(2))
        );
        assert!(matches!(
            parse("A required x=\"1\""),
            Err(JaasError::Syntax(_))
        ));
        assert!(matches!(parse("A maybe;"), Err(JaasError::Syntax(_))));
        assert!(matches!(parse("A required x=;"), Err(JaasError::Syntax(_))));
        assert!(matches!(
            parse("A required x=\"1;"),
            Err(JaasError::Syntax(_))
        ));
        assert_eq!(
            parse(""),
            Err(JaasError::Syntax("the entry must end with ';'".into()))
        );
    }
}
