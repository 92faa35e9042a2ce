//! Helpers for normalizer tests: a platform's update is written once with its
//! usual fields and each test names only the fields it changes
//! ([`with_fields`]); what the normalizer made of it is taken apart with
//! [`inbound`] and [`skip_reason`].

use passepartout_gateway::{Inbound, Normalized};
use serde_json::Value;

/// The message a normalizer made; fails the test if it skipped the update.
pub fn inbound(normalized: Normalized) -> Inbound {
    match normalized {
        Normalized::Inbound(inbound) => *inbound,
        Normalized::Skip { reason } => panic!("skipped: {reason}"),
    }
}

/// Why a normalizer skipped the update; fails the test if it made a message.
pub fn skip_reason(normalized: Normalized) -> &'static str {
    match normalized {
        Normalized::Skip { reason } => reason,
        Normalized::Inbound(inbound) => panic!("not skipped: {inbound:?}"),
    }
}

/// `base` with the members of `extra` added, replacing those it has already.
/// Both must be objects.
pub fn with_fields(mut base: Value, extra: Value) -> Value {
    let (Some(members), Value::Object(extra)) = (base.as_object_mut(), extra) else {
        panic!("only objects take fields");
    };
    members.extend(extra);
    base
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn extra_fields_are_added_and_replace() {
        let merged = with_fields(json!({"a": 1, "b": 2}), json!({"b": 3, "c": 4}));
        assert_eq!(merged, json!({"a": 1, "b": 3, "c": 4}));
    }
}
