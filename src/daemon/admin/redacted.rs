//! The configured secrets kept out of the admin path's documents: a tool's
//! arguments and output, kept in the history and the audit trail, may quote
//! a key or a token (`cat` of a token file), and what the dashboard's live
//! stream hides must not show on the page or after a reload.

use serde_json::Value;

/// Replaces every configured secret in a text.
pub(crate) type Redact = dyn Fn(&str) -> String + Send + Sync;

/// Every string in `value` redacted.
pub(crate) fn redacted(value: &mut Value, redact: &Redact) {
    match value {
        Value::String(text) => *text = redact(text),
        Value::Array(items) => items.iter_mut().for_each(|item| redacted(item, redact)),
        Value::Object(fields) => fields.values_mut().for_each(|field| redacted(field, redact)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_at_any_depth_is_redacted_and_other_values_kept() {
        let mut value = serde_json::json!({"a": ["x canary y", {"b": "canary"}], "n": 3, "t": true});
        redacted(&mut value, &|text: &str| text.replace("canary", "[redacted]"));
        assert_eq!(
            value,
            serde_json::json!({"a": ["x [redacted] y", {"b": "[redacted]"}], "n": 3, "t": true})
        );
    }
}
