//! Says what the parser found wrong in the user's terms. Serde and the
//! `config` crate word their errors for Rust programmers (`enum ProviderKind
//! does not have variant constructor …`, `invalid type: 64-bit integer`);
//! this turns them into what a person editing the file needs: the setting,
//! what it wants, what it got, and the accepted values or a likely spelling.

use std::cell::Cell;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use passepartout_gateway::GroupMode;

use super::{LoopTrigger, ProviderKind, Retrigger, RuleVerdict, SearchBackend};

/// An enum's name and the values it accepts, as written in the file.
type Variants = (&'static str, &'static [&'static str]);

/// The accepted values of each enum a setting can hold, found by name.
fn accepted_values(enum_name: &str) -> Option<&'static [&'static str]> {
    [
        variants_of::<ProviderKind>(),
        variants_of::<LoopTrigger>(),
        variants_of::<Retrigger>(),
        variants_of::<RuleVerdict>(),
        variants_of::<GroupMode>(),
        variants_of::<SearchBackend>(),
    ]
    .into_iter()
    .flatten()
    .find(|(name, _)| *name == enum_name)
    .map(|(_, values)| values)
}

/// `"openaii" is not one of "openai", "anthropic"`.
pub fn not_one_of(found: &str, enum_name: &str) -> String {
    match accepted_values(enum_name) {
        Some(values) => format!("{found:?} is not one of {}", quoted(values)),
        None => format!("{found:?} is not an accepted value"),
    }
}

/// For a value of the wrong shape where a choice was wanted.
pub fn expected_one_of(enum_name: &str) -> String {
    match accepted_values(enum_name) {
        Some(values) => format!("expected one of {}", quoted(values)),
        None => "expected one of the accepted values".into(),
    }
}

fn quoted(values: &[&str]) -> String {
    values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ")
}

/// `expected a whole number, found a string "hourly"`, from the two
/// halves of a parser's "invalid type" error.
pub fn wrong_type(expected: &str, found: &str) -> String {
    format!("expected {}, found {}", expected_kind(expected), found_kind(found))
}

fn expected_kind(expected: &str) -> String {
    let e = expected.to_lowercase();
    let kind = if e.contains("integer") || ["u8", "u16", "u32", "u64", "usize", "i32", "i64"].contains(&e.as_str()) {
        "a whole number"
    } else if e.contains("float") || e == "f64" || e == "f32" {
        "a number"
    } else if e.contains("bool") {
        "true or false"
    } else if e.contains("struct") || e.contains("map") || e.contains("table") {
        "a table"
    } else if e.contains("sequence") || e.contains("array") || e.contains("vec") {
        "a list"
    } else if e.contains("string") || e.contains("char") || e.contains("path") {
        "a string"
    } else if let Some(name) = e.strip_prefix("enum ") {
        return expected_one_of(name);
    } else {
        return expected.to_string();
    };
    kind.to_string()
}

fn found_kind(found: &str) -> String {
    let value = found
        .split_once('`')
        .map(|(_, rest)| rest.trim_end_matches('`').to_string());
    if let Some(rest) = found.strip_prefix("string ") {
        format!("a string {rest}")
    } else if found.starts_with("boolean") {
        format!("the value {}", value.unwrap_or_default())
    } else if found.contains("integer") || found.starts_with("floating point") {
        format!("the number {}", value.unwrap_or_default())
    } else if found.contains("sequence") {
        "a list".into()
    } else if found.contains("map") {
        "a table".into()
    } else if found.contains("unit") {
        "nothing".into()
    } else {
        found.to_string()
    }
}

/// The known key nearest `unknown` by edit distance, if it is near enough
/// to be a slip of the keyboard.
pub fn did_you_mean<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (unknown.chars().count() / 3).max(1);
    known
        .iter()
        .map(|candidate| (edit_distance(unknown, candidate), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, counting a swap of two neighbours as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// Asks `T`'s `Deserialize` which values it accepts: serde hands them to
/// the deserializer when it reads an enum, and this one only listens.
fn variants_of<T: DeserializeOwned>() -> Option<Variants> {
    let heard = Cell::new(None);
    let _ = T::deserialize(Listener(&heard));
    heard.get()
}

struct Listener<'a>(&'a Cell<Option<Variants>>);

impl<'de> Deserializer<'de> for Listener<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(Some((name, variants)));
        Err(de::Error::custom("only listening"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_values_are_listed_as_written_in_the_file() {
        assert_eq!(
            not_one_of("openaii", "ProviderKind"),
            r#""openaii" is not one of "openai", "anthropic""#
        );
        assert_eq!(not_one_of("x", "Nothing"), r#""x" is not an accepted value"#);
    }

    #[test]
    fn types_are_named_in_plain_words() {
        assert_eq!(
            wrong_type("an integer", "string \"hourly\""),
            r#"expected a whole number, found a string "hourly""#
        );
        assert_eq!(
            wrong_type("a boolean", "64-bit integer `3`"),
            "expected true or false, found the number 3"
        );
        assert_eq!(
            wrong_type("struct PipelineConfig", "sequence"),
            "expected a table, found a list"
        );
    }

    #[test]
    fn a_near_key_is_suggested_and_a_far_one_is_not() {
        let known = ["max_depth", "queue_capacity"];
        assert_eq!(did_you_mean("max_depht", &known), Some("max_depth"));
        assert_eq!(did_you_mean("colour", &known), None);
    }
}
