//! What the trees of one-time codes (`pairing_codes`, `link_codes`, each
//! keyed by the code) share: read whole, every code with its record or why
//! that cannot be read, and codes forgotten in one batch.

use serde::de::DeserializeOwned;

use super::approvals::decode;
use super::error::StoreError;

/// A code as its tree keeps it: its record, or why that cannot be read.
pub type StoredCode<T> = (String, Result<T, StoreError>);

/// Every code in `tree` (named `name`), with its record.
pub(super) fn read_codes<T: DeserializeOwned>(
    tree: &sled::Tree,
    name: &'static str,
) -> Result<Vec<StoredCode<T>>, StoreError> {
    tree.iter()
        .map(|item| {
            let (key, value) = item?;
            let code = String::from_utf8_lossy(&key).into_owned();
            Ok((code, decode(name, &value)))
        })
        .collect()
}

/// A batch that removes `codes`.
pub(super) fn forgetting(codes: &[String]) -> sled::Batch {
    let mut batch = sled::Batch::default();
    for code in codes {
        batch.remove(code.as_bytes());
    }
    batch
}
