//! `[pairing]`: whether someone not allowed is offered a one-time code an
//! owner can approve, how long a code lives, how many may wait at once, and
//! how many wrong codes an owner may name per hour.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_PAIRING_EXPIRE_S: u64 = 3600;
pub const DEFAULT_WRONG_CODES_PER_HOUR: u32 = 5;
pub const DEFAULT_MAX_WAITING: u32 = 20;

/// `[pairing]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PairingConfig {
    /// Someone not allowed who writes is sent a pairing code (false: they
    /// are refused, as before).
    pub enabled: bool,
    /// Seconds a code stays valid; a person is sent at most one code in
    /// that time, however often they write.
    pub expire_s: u64,
    /// Codes an owner may name that do not exist (or expired), per hour,
    /// before their further codes are refused unread.
    pub wrong_codes_per_hour: u32,
    /// Codes that may wait for an owner at once: past it, a stranger is
    /// refused as with pairing off, so that a flood of strangers fills
    /// neither the store nor the owner's list.
    pub max_waiting: u32,
}

impl Default for PairingConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            expire_s: DEFAULT_PAIRING_EXPIRE_S,
            wrong_codes_per_hour: DEFAULT_WRONG_CODES_PER_HOUR,
            max_waiting: DEFAULT_MAX_WAITING,
        }
    }
}

impl PairingConfig {
    /// Notes what is wrong with `[pairing]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.expire_s > 0, "pairing.expire_s must be at least 1");
        problems.check(self.max_waiting > 0, "pairing.max_waiting must be at least 1");
    }
}
