//! The `link_codes` tree: the codes a person asked for with `/link`,
//! waiting to be named on their other channel, keyed by the code, so that a
//! restart does not void one. The one named is removed in the transaction
//! that links ([`Store::link`]); expired ones are forgotten by the linking
//! desk, and asking again replaces a person's earlier code.

use super::Store;
use super::approvals::encode;
use super::codes::{StoredCode, forgetting, read_codes};
use super::error::StoreError;
use super::records::Identity;

impl Store {
    /// Every link code waiting, with who asked for it, or why that record
    /// cannot be read (the caller forgets it: a code can be asked for again).
    pub fn link_codes(&self) -> Result<Vec<StoredCode<Identity>>, StoreError> {
        read_codes(&self.inner.link_codes, "link_codes")
    }

    /// Keeps `code`, asked for by `identity`, forgetting `replaced` (their
    /// earlier codes) in the same batch.
    pub fn keep_link_code(&self, code: &str, identity: &Identity, replaced: &[String]) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("link_codes", identity)?;
        let mut batch = forgetting(replaced);
        batch.insert(code.as_bytes(), value);
        self.wrote(self.inner.link_codes.apply_batch(batch).map_err(StoreError::from))
    }

    /// Forgets `codes` (expired ones).
    pub fn forget_link_codes(&self, codes: &[String]) -> Result<(), StoreError> {
        let _writing = self.writing();
        let batch = forgetting(codes);
        self.wrote(self.inner.link_codes.apply_batch(batch).map_err(StoreError::from))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};

    use super::*;
    use crate::store::tests::{open_temp, reopen};

    fn identity() -> Identity {
        Identity {
            gateway: GatewayId::new("telegram").unwrap(),
            user: UserId::new("42").unwrap(),
            aliases: Vec::new(),
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("42").unwrap()),
            at_ms: 5,
            names: Default::default(),
        }
    }

    #[test]
    fn codes_are_kept_across_a_reopen_replaced_and_an_unreadable_one_named() {
        let (dir, store) = open_temp();
        store.keep_link_code("ABCDEFGH", &identity(), &[]).unwrap();
        store
            .keep_link_code("BCDEFGHJ", &identity(), &["ABCDEFGH".into()])
            .unwrap();
        store.inner.link_codes.insert("HGFEDCBA", &b"not json"[..]).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        let codes = store.link_codes().unwrap();
        assert_eq!(codes.len(), 2, "the replaced code is gone");
        assert_eq!(codes[0].0, "BCDEFGHJ");
        assert_eq!(codes[0].1.as_ref().unwrap(), &identity());
        assert!(matches!(codes[1].1, Err(StoreError::Corrupt { .. })));
        store.forget_link_codes(&["HGFEDCBA".to_owned()]).unwrap();
        assert_eq!(store.link_codes().unwrap().len(), 1);
    }
}
