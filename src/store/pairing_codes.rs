//! The `pairing_codes` tree: the codes sent to people not let in, waiting
//! for an owner, keyed by the code, so that a restart does not void a code
//! somebody was already sent. Sending one is audited in the same
//! transaction; the one used is removed in the transaction that pairs its
//! person ([`Store::pair`]); expired ones are forgotten by the pairing desk.

use sled::Transactional;

use super::Store;
use super::approvals::{audit_in, decode, encode};
use super::error::StoreError;
use super::records::{AuditEvent, PendingPairing};

impl Store {
    /// Every code waiting, with who it was sent to.
    pub fn pairing_codes(&self) -> Result<Vec<(String, PendingPairing)>, StoreError> {
        self.inner
            .pairing_codes
            .iter()
            .map(|item| {
                let (key, value) = item?;
                let code = String::from_utf8(key.to_vec()).map_err(|e| StoreError::Corrupt {
                    tree: "pairing_codes",
                    reason: e.to_string(),
                })?;
                Ok((code, decode("pairing_codes", &value)?))
            })
            .collect()
    }

    /// Keeps `code`, sent to `pending`'s person, with `event`.
    pub fn keep_pairing_code(
        &self,
        code: &str,
        pending: &PendingPairing,
        event: &AuditEvent,
    ) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("pairing_codes", pending)?;
        let written = (&self.inner.pairing_codes, &self.inner.audit).transaction(|(codes, audit)| {
            codes.insert(code.as_bytes(), value.as_slice())?;
            audit_in(audit, event)
        });
        self.wrote(written.map_err(StoreError::from))
    }

    /// Forgets `codes` (expired ones).
    pub fn forget_pairing_codes(&self, codes: &[String]) -> Result<(), StoreError> {
        let _writing = self.writing();
        let mut batch = sled::Batch::default();
        for code in codes {
            batch.remove(code.as_bytes());
        }
        self.wrote(self.inner.pairing_codes.apply_batch(batch).map_err(StoreError::from))
    }
}
