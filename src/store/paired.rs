//! The `paired` tree: the people let in by a pairing code, keyed by gateway
//! and user. Pairing and revoking write their audit event in the same
//! transaction (pairing forgets the code used in it too); a pairing code
//! that was refused is audited on its own.

use passepartout_gateway::{ConversationKey, GatewayId, OutboundBody, UserId};
use sled::Transactional;

use super::Store;
use super::approvals::{audit_in, encode};
use super::error::StoreError;
use super::outbox::put_notices;
use super::records::{AuditEvent, PairedPerson};

fn key(gateway: &GatewayId, user: &UserId) -> Vec<u8> {
    let mut key = gateway.as_str().as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(user.as_str().as_bytes());
    key
}

impl Store {
    /// Everyone paired, by gateway and user.
    pub fn paired(&self) -> Result<Vec<PairedPerson>, StoreError> {
        self.inner
            .paired
            .iter()
            .values()
            .map(|value| {
                serde_json::from_slice(&value?).map_err(|e| StoreError::Corrupt {
                    tree: "paired",
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// Keeps `person` (replacing an earlier pairing of theirs), with `event`,
    /// forgetting the pairing code they were let in by, and putting
    /// `notices` (telling them) in the outbox.
    pub fn pair(
        &self,
        person: &PairedPerson,
        code: &str,
        event: &AuditEvent,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("paired", person)?;
        let key = key(&person.gateway, &person.user);
        let notices = self.prepare_notices(notices)?;
        let trees = (
            &self.inner.paired,
            &self.inner.pairing_codes,
            &self.inner.audit,
            &self.inner.outbox,
        );
        let written = trees.transaction(|(paired, codes, audit, outbox)| {
            paired.insert(key.as_slice(), value.as_slice())?;
            codes.remove(code.as_bytes())?;
            put_notices(outbox, &notices)?;
            audit_in(audit, event)
        });
        self.wrote(written.map_err(StoreError::from))
    }

    /// Forgets the pairing of `user` on `gateway`, with `event`; whether
    /// there was one (nothing is audited when there was not).
    pub fn unpair(&self, gateway: &GatewayId, user: &UserId, event: &AuditEvent) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let key = key(gateway, user);
        let removed = (&self.inner.paired, &self.inner.audit).transaction(|(paired, audit)| {
            if paired.remove(key.as_slice())?.is_none() {
                return Ok(false);
            }
            audit_in(audit, event)?;
            Ok(true)
        });
        self.wrote(removed.map_err(StoreError::from))
    }

    /// Records `event` in the audit trail on its own.
    pub fn audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        let _writing = self.writing();
        let written = self.inner.audit.transaction(|audit| audit_in(audit, event));
        self.wrote(written.map_err(StoreError::from))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::ChatId;

    use super::*;
    use crate::store::records::{Audited, Person};
    use crate::store::tests::{open_temp, reopen};

    fn ada() -> PairedPerson {
        PairedPerson {
            gateway: GatewayId::new("telegram").unwrap(),
            user: UserId::new("42").unwrap(),
            approver: true,
            at_ms: 5,
            by: Person::known_as(GatewayId::new("local").unwrap(), UserId::new("1000").unwrap()),
            names: Default::default(),
        }
    }

    fn event(what: Audited) -> AuditEvent {
        AuditEvent {
            at_ms: 5,
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("42").unwrap()),
            what,
        }
    }

    #[test]
    fn a_pairing_is_kept_across_a_reopen_and_revoked_once() {
        let (dir, store) = open_temp();
        let ada = ada();
        let paired = event(Audited::Paired {
            person: ada.user.clone(),
            approver: true,
            by: ada.by.clone(),
            names: Default::default(),
        });
        let told = ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("42").unwrap());
        let notice = OutboundBody::Text {
            text: "You are let in.".into(),
            kind: passepartout_gateway::ReplyKind::Notice,
        };
        store
            .pair(&ada, "ABCDEFGH", &paired, &[(told.clone(), notice.clone())])
            .unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        assert_eq!(store.paired().unwrap(), vec![ada.clone()]);
        let waiting = store.outbox_for(&told).unwrap();
        assert_eq!(waiting.len(), 1, "the notice is in the outbox with the pairing");
        assert_eq!(waiting[0].outbound.body, notice);
        let unpaired = event(Audited::Unpaired {
            person: ada.user.clone(),
            by: ada.by.clone(),
        });
        assert!(store.unpair(&ada.gateway, &ada.user, &unpaired).unwrap());
        assert!(!store.unpair(&ada.gateway, &ada.user, &unpaired).unwrap(), "only once");
        assert!(store.paired().unwrap().is_empty());
        let audited: Vec<_> = store.audit_events(10).unwrap().into_iter().map(|e| e.what).collect();
        assert_eq!(
            audited.len(),
            2,
            "paired and unpaired, the second revoke not: {audited:?}"
        );
    }
}
