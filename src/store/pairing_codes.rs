//! The `pairing_codes` tree: the codes sent to people not let in, waiting
//! for an owner, keyed by the code, so that a restart does not void a code
//! somebody was already sent. Sending one is audited in the same
//! transaction; the one used is removed in the transaction that pairs its
//! person ([`Store::pair`]); expired ones are forgotten by the pairing desk.

use passepartout_gateway::{ConversationKey, OutboundBody};
use sled::Transactional;

use super::Store;
use super::approvals::{audit_in, encode};
use super::codes::{StoredCode, forgetting, read_codes};
use super::error::StoreError;
use super::outbox::put_notices;
use super::records::{AuditEvent, PendingPairing};

impl Store {
    /// Every code waiting, with who it was sent to, or why that record
    /// cannot be read (it is the caller's to forget: a code can be sent
    /// again).
    pub fn pairing_codes(&self) -> Result<Vec<StoredCode<PendingPairing>>, StoreError> {
        read_codes(&self.inner.pairing_codes, "pairing_codes")
    }

    /// Keeps `code`, sent to `pending`'s person, with `event`, putting
    /// `notices` (telling the owners who asks) in the outbox.
    pub fn keep_pairing_code(
        &self,
        code: &str,
        pending: &PendingPairing,
        event: &AuditEvent,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("pairing_codes", pending)?;
        let notices = self.prepare_notices(notices)?;
        let trees = (&self.inner.pairing_codes, &self.inner.audit, &self.inner.outbox);
        let written = trees.transaction(|(codes, audit, outbox)| {
            codes.insert(code.as_bytes(), value.as_slice())?;
            put_notices(outbox, &notices)?;
            audit_in(audit, event)
        });
        self.wrote(written.map_err(StoreError::from))
    }

    /// Forgets `codes` (expired ones).
    pub fn forget_pairing_codes(&self, codes: &[String]) -> Result<(), StoreError> {
        let _writing = self.writing();
        let batch = forgetting(codes);
        self.wrote(self.inner.pairing_codes.apply_batch(batch).map_err(StoreError::from))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};

    use super::*;
    use crate::store::records::Audited;
    use crate::store::tests::{open_temp, reopen};

    fn waiting() -> (PendingPairing, AuditEvent) {
        let conversation = ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("77").unwrap());
        let user = UserId::new("77").unwrap();
        let event = AuditEvent {
            at_ms: 5,
            conversation: conversation.clone(),
            what: Audited::PairingOffered {
                person: user.clone(),
                names: Default::default(),
            },
        };
        let pending = PendingPairing {
            conversation,
            user,
            issued_ms: 5,
            names: Default::default(),
        };
        (pending, event)
    }

    #[test]
    fn codes_are_kept_across_a_reopen_an_unreadable_one_named_and_forgotten_on_request() {
        let (dir, store) = open_temp();
        let (pending, event) = waiting();
        store.keep_pairing_code("ABCDEFGH", &pending, &event, &[]).unwrap();
        store.inner.pairing_codes.insert("HGFEDCBA", &b"not json"[..]).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        let codes = store.pairing_codes().unwrap();
        assert_eq!(codes.len(), 2);
        assert_eq!(codes[0].0, "ABCDEFGH");
        assert_eq!(codes[0].1.as_ref().unwrap(), &pending);
        assert_eq!(codes[1].0, "HGFEDCBA");
        assert!(matches!(codes[1].1, Err(StoreError::Corrupt { .. })));
        assert_eq!(store.audit_events(10).unwrap().len(), 1, "the offer is audited with it");
        store.forget_pairing_codes(&["HGFEDCBA".to_owned()]).unwrap();
        assert_eq!(store.pairing_codes().unwrap().len(), 1);
    }
}
