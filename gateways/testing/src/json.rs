//! [`proptest`] strategies for the JSON a gateway reads from outside, for
//! property tests of normalizers and frame parsers: that nothing a platform
//! (or a stranger on a socket) sends makes them panic, and that every input
//! is either taken or refused with a reason.
//!
//! Purely random JSON hardly ever gets past a parser's first check, so the
//! strategies lean towards plausible shapes: [`object`] builds objects with a
//! platform's real field names, each value mostly of the expected kind and
//! now and then anything at all; [`any_json`] draws keys mostly from a given
//! list; and [`deep`] buries a value past any parser's recursion limit.
//! Each platform's tests describe its own shapes out of these.

use proptest::prelude::*;
use serde_json::Value;

/// How many cases each property test runs: enough to reach the odd
/// branches, few enough to keep the test suite's time bounded.
pub const CASES: u32 = 256;

/// The variable that repeats a run: the seed a failing run printed.
pub const SEED_VAR: &str = "PROPTEST_RNG_SEED";

/// The property test configuration every gateway's tests use. Each run
/// draws a fresh seed, so that runs together cover more than one set of
/// cases; the seed is printed, which the test harness shows when the test
/// fails, and `PROPTEST_RNG_SEED=N` repeats that run. A failing case is also
/// kept in the crate's `proptest-regressions/` folder (committed), so it
/// runs first in every later run.
pub fn config() -> ProptestConfig {
    let seed = std::env::var(SEED_VAR)
        .ok()
        .and_then(|seed| seed.trim().parse().ok())
        .unwrap_or_else(fresh_seed);
    eprintln!("property test seed {seed} (repeat the run with {SEED_VAR}={seed})");
    ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..ProptestConfig::with_cases(CASES)
    }
}

/// A seed no earlier run is likely to have drawn: the standard library's
/// randomly keyed hasher, which needs no random-number crate.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// A JSON leaf: null, a boolean, a number of any size or sign, a string
/// (often one of `words`, which a normalizer may look for).
pub fn leaf(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-3i64..100).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,16}".prop_map(Value::from),
        prop::sample::select(words).prop_map(Value::from),
    ]
    .boxed()
}

/// Any JSON value a few levels deep whose object keys are mostly `keys` and
/// whose strings are often `words`.
pub fn any_json(keys: &'static [&'static str], words: &'static [&'static str]) -> BoxedStrategy<Value> {
    leaf(words)
        .prop_recursive(5, 48, 6, move |inner| {
            let key = prop_oneof![4 => prop::sample::select(keys).prop_map(str::to_owned), 1 => "[a-zA-Z_]{1,10}"];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key, inner), 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object with each of `fields` present most of the time, its value
/// mostly drawn from its own strategy and now and then from `other`.
pub fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>, other: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    object_with_odds(fields, other, 10)
}

/// [`object`] with one field in `odds` missing and one value in `odds` drawn
/// from `other`: for shapes nested so deep, or with so many fields, that at
/// [`object`]'s rate hardly one would come out whole.
pub fn object_with_odds(
    fields: Vec<(&'static str, BoxedStrategy<Value>)>,
    other: BoxedStrategy<Value>,
    odds: u32,
) -> BoxedStrategy<Value> {
    let odds = odds.max(2);
    let present = 1.0 - 1.0 / f64::from(odds);
    let fields: Vec<_> = fields
        .into_iter()
        .map(|(name, value)| {
            let value = prop_oneof![odds - 1 => value, 1 => other.clone()];
            prop::option::weighted(present, value).prop_map(move |value| value.map(|value| (name.to_owned(), value)))
        })
        .collect();
    fields
        .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
        .boxed()
}

/// `inner` buried 130 to 300 levels deep in arrays or in objects under `key`:
/// past serde_json's recursion limit (128) when parsed from text.
pub fn deep(inner: BoxedStrategy<Value>, key: &'static str) -> BoxedStrategy<Value> {
    (inner, 130usize..300, any::<bool>())
        .prop_map(move |(mut value, depth, in_objects)| {
            for _ in 0..depth {
                value = if in_objects {
                    Value::Object([(key.to_owned(), value)].into_iter().collect())
                } else {
                    Value::Array(vec![value])
                };
            }
            value
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;

    fn depth(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn deep_values_are_past_the_recursion_limit() {
        let mut runner = TestRunner::deterministic();
        let value = deep(leaf(&["x"]), "x").new_tree(&mut runner).unwrap().current();
        assert!(depth(&value) >= 130);
        assert!(serde_json::from_str::<Value>(&value.to_string()).is_err());
    }
}
