//! A test that cannot run here says so where CI counts it, and fails where
//! the machine has what it needs.
//!
//! The test harness hides what a passing test prints, so a test that
//! returns early because this machine cannot do what it needs (mount a
//! tmpfs, run a child as another user) would pass unseen. Its line,
//! `SKIPPED <test> [<need>]: <why>`, goes to the process's stderr past the
//! harness's capture, in one write, and is appended to the file that
//! [`SKIPPED_FILE_VAR`] names, if set: `.ci/run` counts the lines there
//! rather than searching a log in which parallel tests interleave.
//!
//! A skip names the [`Need`] the machine lacked. Where [`REQUIRE_VAR`]
//! lists that need (`.ci/run` sets it to what its probe found the machine
//! offers), the test fails instead: it skipped something the machine has,
//! so a broken check in the test cannot pass as a missing kernel feature.
//!
//! The same file is the library's unit tests' helper (`crate::skip`).

use std::io::Write;

/// Names the file a skip's line is appended to.
pub const SKIPPED_FILE_VAR: &str = "PP_SKIPPED_FILE";

/// Lists, comma-separated, the needs a test may not skip here.
pub const REQUIRE_VAR: &str = "PP_REQUIRE";

/// What a test may need that a machine may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Landlock file system rules (ABI 1 on).
    Landlock,
    /// Landlock network rules (ABI 4 on).
    LandlockNetwork,
    /// A PID namespace for a child, as the daemon makes one.
    PidNamespaces,
    /// Running a child as another user (root, with the id usable).
    OtherUsers,
    /// A control group the test may make children in.
    Cgroups,
    /// Mounting a tmpfs.
    Tmpfs,
    /// Chromium and chromedriver.
    Browser,
    /// `systemd-analyze`.
    SystemdAnalyze,
    /// A Python that makes virtual environments, new enough for Synapse
    /// (3.10 on).
    Synapse,
}

impl Need {
    /// Every need, for a check that `.ci/probe` asks after each.
    pub const ALL: [Need; 9] = [
        Need::Landlock,
        Need::LandlockNetwork,
        Need::PidNamespaces,
        Need::OtherUsers,
        Need::Cgroups,
        Need::Tmpfs,
        Need::Browser,
        Need::SystemdAnalyze,
        Need::Synapse,
    ];

    /// The name [`REQUIRE_VAR`] lists it by.
    pub fn name(self) -> &'static str {
        match self {
            Need::Landlock => "landlock",
            Need::LandlockNetwork => "landlock-network",
            Need::PidNamespaces => "pid-namespaces",
            Need::OtherUsers => "other-users",
            Need::Cgroups => "cgroups",
            Need::Tmpfs => "tmpfs",
            Need::Browser => "browser",
            Need::SystemdAnalyze => "systemd-analyze",
            Need::Synapse => "synapse",
        }
    }

    /// Whether [`REQUIRE_VAR`] lists it.
    fn required(self) -> bool {
        std::env::var(REQUIRE_VAR).is_ok_and(|list| required_in(&list, self))
    }
}

/// Whether `list` (comma-separated names) names `need`.
fn required_in(list: &str, need: Need) -> bool {
    list.split(',').any(|name| name.trim() == need.name())
}

/// Says that `test` skipped for want of `need`, and why; fails the test
/// instead where [`REQUIRE_VAR`] says this machine offers `need`.
pub fn skipped(test: &str, need: Need, why: &str) {
    let need_name = need.name();
    assert!(
        !need.required(),
        "{test} skipped for want of {need_name}, which this machine offers ({REQUIRE_VAR}): {why}"
    );
    let line = format!("SKIPPED {test} [{need_name}]: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(file) = std::env::var_os(SKIPPED_FILE_VAR) {
        // One append of one short line: lines of parallel tests, and of
        // the test binaries, do not mix.
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&file)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(error) = appended {
            panic!(
                "{test} skipped, and cannot say so in {}: {error}",
                file.to_string_lossy()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_is_required_only_by_its_own_name() {
        let list = "landlock, pid-namespaces,browser";
        assert!(required_in(list, Need::Landlock));
        assert!(required_in(list, Need::PidNamespaces));
        assert!(required_in(list, Need::Browser));
        assert!(!required_in(list, Need::LandlockNetwork));
        assert!(!required_in("", Need::Landlock));
    }
}
