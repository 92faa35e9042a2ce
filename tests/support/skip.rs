//! A test that cannot run here says so where CI's log shows it.
//!
//! The test harness hides what a passing test prints, so a test that
//! returns early because this machine cannot do what it needs (mount a
//! tmpfs, run a child as another user) would pass unseen. Its line goes to
//! the process's stderr directly, past the harness's capture, in a form
//! `.ci/run` counts: `SKIPPED <test>: <why>`.

use std::io::Write;

/// Says that `test` skipped, and why.
pub fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
