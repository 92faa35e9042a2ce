//! `[audit]`: how long the audit trail (approvals requested and decided,
//! tool runs) is kept before the hourly maintenance deletes it.

use serde::{Deserialize, Serialize};

use super::{MAX_KEEP_DAYS, Problems};

/// Half a year: long enough to answer "who approved that, and when?" about
/// anything still remembered, while a busy assistant (~200 bytes per tool
/// run, a few hundred runs a day) keeps the tree to a few megabytes.
pub const DEFAULT_AUDIT_KEEP_DAYS: u64 = 180;

/// `[audit]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Audit events older than this many days are deleted; 0 keeps them
    /// for good.
    pub keep_days: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            keep_days: DEFAULT_AUDIT_KEEP_DAYS,
        }
    }
}

impl AuditConfig {
    /// Notes what is wrong with `[audit]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(
            self.keep_days <= MAX_KEEP_DAYS,
            format!("audit.keep_days must be at most {MAX_KEEP_DAYS} (0 keeps the trail for good)"),
        );
    }
}
