//! Pairing codes: 8 characters of the approval tokens' unambiguous alphabet
//! from the thread-local CSPRNG (about 40 bits), so guessing one within the
//! wrong-code limit is hopeless. What an owner types is read leniently
//! (spaces around it, lower case), anything else is no code at all.

use std::fmt;

use passepartout_gateway::TOKEN_ALPHABET;
use rand::Rng;

pub const CODE_CHARS: usize = 8;

/// A pairing code. Its `Debug` hides it, so it cannot reach a log by a `?`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Code(String);

impl Code {
    /// A fresh random code.
    pub fn generate() -> Self {
        let alphabet = TOKEN_ALPHABET.as_bytes();
        let mut rng = rand::rng();
        Self(
            (0..CODE_CHARS)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
                .collect(),
        )
    }

    /// The code an owner typed, if it is one.
    pub fn parse(typed: &str) -> Option<Self> {
        let code = typed.trim().to_ascii_uppercase();
        let valid = code.len() == CODE_CHARS && code.chars().all(|c| TOKEN_ALPHABET.contains(c));
        valid.then_some(Self(code))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Code(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_valid_differ_and_parse_back() {
        let code = Code::generate();
        assert_eq!(code.as_str().len(), CODE_CHARS);
        assert_eq!(
            Code::parse(&format!(" {} ", code.as_str().to_lowercase())),
            Some(code.clone())
        );
        let distinct: std::collections::HashSet<_> = (0..1000).map(|_| Code::generate()).collect();
        assert_eq!(distinct.len(), 1000);
        assert_eq!(format!("{code:?}"), "Code(…)", "never shown by Debug");
    }

    #[test]
    fn what_is_not_a_code_does_not_parse() {
        for typed in ["", "ABCDEFG", "ABCDEFGHJ", "ABCDEFG0", "ABCDEFGI", "ÄBCDEFGH"] {
            assert_eq!(Code::parse(typed), None, "{typed:?}");
        }
    }
}
