//! The embedded formats of API v2 consumer instances (no I/O): how a record's key and value bytes appear in
//! a `GET .../records` answer, and which `Accept` headers ask for which format.
//!
//! - `binary`: the bytes as base64 text (`application/vnd.kafka.binary.v2+json`);
//! - `json`: the bytes parsed as JSON, embedded as that value (`application/vnd.kafka.json.v2+json`);
//! - `string` (Runnel's addition): the bytes as UTF-8 text, invalid sequences replaced
//!   (`application/vnd.kafka.string.v2+json`).
//!
//! A null key or value is JSON `null` in every format.

use base64ct::{Base64, Encoding};
use serde_json::Value;

/// The format a consumer instance renders keys and values in (chosen when it is created).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddedFormat {
    /// Base64 text.
    Binary,
    /// Parsed JSON.
    Json,
    /// UTF-8 text.
    String,
}

impl EmbeddedFormat {
    /// The format named `name` (`binary`, `json`, `string`; any case).
    pub fn parse(name: &str) -> Option<EmbeddedFormat> {
        match name.to_ascii_lowercase().as_str() {
            "binary" => Some(EmbeddedFormat::Binary),
            "json" => Some(EmbeddedFormat::Json),
            "string" => Some(EmbeddedFormat::String),
            _ => None,
        }
    }

    /// Its name, as `format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            EmbeddedFormat::Binary => "binary",
            EmbeddedFormat::Json => "json",
            EmbeddedFormat::String => "string",
        }
    }

    /// The content type of a records answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            EmbeddedFormat::Binary => "application/vnd.kafka.binary.v2+json",
            EmbeddedFormat::Json => "application/vnd.kafka.json.v2+json",
            EmbeddedFormat::String => "application/vnd.kafka.string.v2+json",
        }
    }

    /// Whether an `Accept` header (absent: anything) takes records in this format: one of its media
    /// ranges is this format's content type, a wildcard, `application/json` or the format-less
    /// `application/vnd.kafka.v2+json`. A header naming only other embedded formats does not.
    pub fn accepted_by(self, accept: Option<&str>) -> bool {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return true;
        };
        accept.split(',').any(|range| {
            let essence = range.split(';').next().unwrap_or("").trim();
            let essence = essence.to_ascii_lowercase();
            matches!(
                essence.as_str(),
                "*/*" | "application/*" | "application/json" | "application/vnd.kafka.v2+json"
            ) || essence == self.content_type()
        })
    }

    /// `bytes` (`None`: null) rendered in this format; `Err` for JSON format bytes that are not JSON.
    pub fn render(self, bytes: Option<&[u8]>) -> Result<Value, serde_json::Error> {
        let Some(bytes) = bytes else {
            return Ok(Value::Null);
        };
        Ok(match self {
            EmbeddedFormat::Binary => Value::String(Base64::encode_string(bytes)),
            EmbeddedFormat::Json => serde_json::from_slice(bytes)?,
            EmbeddedFormat::String => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_render_keys_and_values() {
        let b = EmbeddedFormat::Binary;
        assert_eq!(b.render(Some(b"hi")).unwrap(), json!("aGk="));
        assert_eq!(b.render(None).unwrap(), Value::Null);
        let j = EmbeddedFormat::Json;
        assert_eq!(j.render(Some(br#"{"a":[1]}"#)).unwrap(), json!({"a": [1]}));
        assert!(j.render(Some(b"not json")).is_err());
        let s = EmbeddedFormat::String;
        assert_eq!(s.render(Some(b"caf\xc3\xa9")).unwrap(), json!("café"));
        assert_eq!(s.render(Some(b"\xff")).unwrap(), json!("\u{fffd}"));
    }

    #[test]
    fn accept_headers_choose_the_format() {
        let b = EmbeddedFormat::Binary;
        for ok in [
            None,
            Some(""),
            Some("*/*"),
            Some("application/json"),
            Some("application/vnd.kafka.binary.v2+json"),
            Some("application/vnd.kafka.json.v2+json, application/vnd.kafka.binary.v2+json; q=0.5"),
            Some("application/vnd.kafka.v2+json"),
        ] {
            assert!(b.accepted_by(ok), "{ok:?}");
        }
        for bad in ["application/vnd.kafka.json.v2+json", "text/plain"] {
            assert!(!b.accepted_by(Some(bad)), "{bad}");
        }
        assert_eq!(EmbeddedFormat::parse("JSON"), Some(EmbeddedFormat::Json));
        assert_eq!(EmbeddedFormat::parse("avro"), None);
        assert_eq!(EmbeddedFormat::String.name(), "string");
    }
}
