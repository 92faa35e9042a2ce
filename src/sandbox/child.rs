//! The part of confinement that runs in the child, between `fork` and
//! `exec`.
//!
//! After `fork` in a multi-threaded parent, the child may only make
//! async-signal-safe calls: no allocation, no lock. So everything that
//! allocates or opens files (the ruleset, its rules' path descriptors, the
//! temporary directory) is done in the parent before the spawn, and the
//! child only makes system calls: `setrlimit`, `prctl(PR_SET_NO_NEW_PRIVS)`
//! and `landlock_restrict_self` (the crate's `restrict_self` is just those
//! two calls on the ruleset's descriptor; its errors carry the raw OS error
//! and allocate nothing), then closes the descriptor.

use std::io;

use landlock::{RulesetCreated, RulesetStatus};

use super::limits::Limits;

/// What the child applies to itself.
pub(super) struct InChild {
    /// Taken on first use: the hook runs once, in the child.
    ruleset: Option<RulesetCreated>,
    limits: Limits,
    /// Fail the spawn when the ruleset could not be enforced at all.
    strict: bool,
}

impl InChild {
    pub(super) fn new(ruleset: Option<RulesetCreated>, limits: Limits, strict: bool) -> Self {
        Self {
            ruleset,
            limits,
            strict,
        }
    }

    /// Applies the limits, `no_new_privs` and the ruleset to the calling
    /// process. Only system calls happen here (see the module doc).
    pub(super) fn enter(&mut self) -> io::Result<()> {
        self.limits.apply()?;
        match self.ruleset.take() {
            Some(ruleset) => match ruleset.restrict_self() {
                Ok(status) if self.strict && status.ruleset == RulesetStatus::NotEnforced => {
                    Err(io::Error::from_raw_os_error(libc::EPERM))
                }
                Ok(_) => Ok(()),
                Err(_) => Err(io::Error::from_raw_os_error(libc::EPERM)),
            },
            // Without Landlock, still no setuid gains.
            None => rustix::thread::set_no_new_privs(true).map_err(io::Error::from),
        }
    }
}
