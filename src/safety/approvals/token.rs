//! Approval tokens: 8 characters of the unambiguous alphabet from the
//! thread-local CSPRNG (about 40 bits), so guessing one is hopeless within
//! the wrong-token rate limit.

use passepartout_gateway::{ApprovalToken, TOKEN_ALPHABET};
use rand::Rng;

pub const TOKEN_CHARS: usize = 8;

pub fn generate() -> ApprovalToken {
    let alphabet = TOKEN_ALPHABET.as_bytes();
    let mut rng = rand::rng();
    let token: String = (0..TOKEN_CHARS)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
        .collect();
    ApprovalToken::new(token).expect("built from the token alphabet")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_valid_and_differ() {
        let a = generate();
        assert_eq!(a.as_str().len(), TOKEN_CHARS);
        let distinct: std::collections::HashSet<_> = (0..1000).map(|_| generate()).collect();
        assert_eq!(distinct.len(), 1000);
    }
}
