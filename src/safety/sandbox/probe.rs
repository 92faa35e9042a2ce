//! What the running kernel offers: the Landlock ABI version (0 where Landlock
//! is missing or switched off), and what that lets a ruleset enforce; and
//! whether the daemon may give each tool process a PID namespace of its own.

use super::isolate::Isolation;
use crate::config::SandboxNetwork;

/// The environment variable that makes the daemon act as if the kernel
/// offered this Landlock ABI (lower than the real one): how a test sees what
/// happens on a kernel without Landlock. (Not `PASSEPARTOUT_…`: that prefix
/// is the configuration's.)
pub const PRETEND_ABI_VAR: &str = "PP_PRETEND_LANDLOCK_ABI";

/// The environment variable that makes the daemon act as if the kernel let
/// it make no namespaces (set to `1`): how a test sees the fallback.
pub const PRETEND_NO_ISOLATION_VAR: &str = "PP_PRETEND_NO_ISOLATION";

/// The kernel's Landlock support, and whether tool processes get a PID
/// namespace of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    abi: u32,
    isolates: bool,
}

impl Support {
    /// Asks the kernel, unless [`PRETEND_ABI_VAR`] names a lower version or
    /// [`PRETEND_NO_ISOLATION_VAR`] is set. Making a namespace is tried with
    /// `/bin/true` (about a millisecond).
    pub fn probe() -> Self {
        let real = kernel_abi();
        let pretended = std::env::var(PRETEND_ABI_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        let refused = std::env::var(PRETEND_NO_ISOLATION_VAR).is_ok_and(|v| v.trim() == "1");
        Self {
            abi: pretended.map_or(real, |p| p.min(real)),
            isolates: !refused && Isolation::prepare().available(),
        }
    }

    /// Support for ABI `abi`, as if the kernel offered it, without
    /// namespaces.
    pub fn pretend(abi: u32) -> Self {
        Self { abi, isolates: false }
    }

    /// This support, with namespaces or without.
    pub fn isolating(self, isolates: bool) -> Self {
        Self { isolates, ..self }
    }

    /// Whether each tool process runs in a PID namespace of its own, so
    /// nothing it starts outlives it.
    pub fn isolates(self) -> bool {
        self.isolates
    }

    /// Whether Landlock limits connecting to a Unix socket by its path (ABI
    /// 9 on).
    pub fn unix_paths(self) -> bool {
        self.abi >= 9
    }

    /// The Landlock ABI version; 0 without Landlock.
    pub fn abi(self) -> u32 {
        self.abi
    }

    /// Whether file system rules are enforced.
    pub fn filesystem(self) -> bool {
        self.abi >= 1
    }

    /// Whether TCP connect and bind rules are enforced (ABI 4 on).
    pub fn network(self) -> bool {
        self.abi >= 4
    }

    /// One line saying what is enforced under a policy asking for `network`
    /// and granting `unix_sockets`, with each command in a group of `cgroups`
    /// (its name) or none, for `doctor` and `status`.
    pub fn describe(self, network: SandboxNetwork, unix_sockets: usize, cgroups: Option<&str>) -> String {
        let isolated = if self.isolates {
            "; each runs in a PID namespace of its own, so nothing it starts outlives it"
        } else {
            "; no PID namespaces here (the kernel refused one), so a process a command starts and detaches \
             (`setsid`) can outlive it"
        };
        let limits = match cgroups {
            Some(kind) => format!("; memory and process limits hold for the whole command ({kind})"),
            None => "; memory limits hold per process (no cgroup of its own to hold the whole command)".to_owned(),
        };
        let ending = format!("{isolated}{limits}");
        let unix = match (unix_sockets, self.unix_paths()) {
            (0, _) => "; no Unix sockets".to_owned(),
            (n, true) => format!("; {n} Unix socket(s) granted by path"),
            (n, false) => format!(
                "; {n} Unix socket(s) granted, but this kernel cannot limit them by path (Landlock ABI 9), so every \
                 Unix socket of the user is reachable except the daemon's own"
            ),
        };
        if !self.filesystem() {
            return format!(
                "no Landlock on this kernel: shell commands and MCP servers run unconfined (resource limits \
                 only){unix}{ending}"
            );
        }
        let net = match (network, self.network()) {
            (SandboxNetwork::Any, _) => "network open",
            (SandboxNetwork::None, true) => "network closed (TCP connect and bind)",
            (SandboxNetwork::None, false) => "network NOT closed (needs Landlock ABI 4)",
        };
        format!(
            "shell commands and MCP servers confined by Landlock ABI {}: files beyond the workspace and the \
             system refused, {net}{unix}{ending}",
            self.abi
        )
    }
}

/// The ABI version the kernel reports, 0 when the call fails (ENOSYS: not
/// built in; EOPNOTSUPP: switched off at boot).
fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // call reads no memory and only returns the ABI version (or -1).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretending_no_landlock_says_unconfined() {
        let none = Support::pretend(0);
        assert!(!none.filesystem() && !none.network());
        assert!(none.describe(SandboxNetwork::None, 0, None).contains("unconfined"));
    }

    #[test]
    fn network_rules_need_abi_four() {
        assert!(!Support::pretend(3).network());
        assert!(Support::pretend(4).network());
        assert!(
            Support::pretend(3)
                .describe(SandboxNetwork::None, 0, None)
                .contains("NOT closed")
        );
        assert!(
            Support::pretend(7)
                .describe(SandboxNetwork::None, 0, None)
                .contains("network closed")
        );
    }

    #[test]
    fn the_line_says_what_outlives_a_command_and_which_sockets_are_open() {
        let line = Support::pretend(7)
            .isolating(true)
            .describe(SandboxNetwork::Any, 0, None);
        assert!(line.contains("PID namespace of its own"), "{line}");
        assert!(line.contains("no Unix sockets"), "{line}");
        assert!(line.contains("per process"), "{line}");
        let line = Support::pretend(7).describe(SandboxNetwork::Any, 0, Some("cgroup v2"));
        assert!(line.contains("for the whole command (cgroup v2)"), "{line}");
        let line = Support::pretend(7).describe(SandboxNetwork::Any, 1, None);
        assert!(line.contains("can outlive it"), "{line}");
        assert!(line.contains("cannot limit them by path"), "{line}");
        assert!(
            Support::pretend(9)
                .describe(SandboxNetwork::Any, 1, None)
                .contains("granted by path")
        );
    }
}
