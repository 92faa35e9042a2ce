//! What the running kernel offers: the Landlock ABI version (0 where Landlock
//! is missing or switched off), and what that lets a ruleset enforce.

use crate::config::SandboxNetwork;

/// The environment variable that makes the daemon act as if the kernel
/// offered this Landlock ABI (lower than the real one): how a test sees what
/// happens on a kernel without Landlock. (Not `PASSEPARTOUT_…`: that prefix
/// is the configuration's.)
pub const PRETEND_ABI_VAR: &str = "PP_PRETEND_LANDLOCK_ABI";

/// The kernel's Landlock support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    abi: u32,
}

impl Support {
    /// Asks the kernel, unless [`PRETEND_ABI_VAR`] names a lower version.
    pub fn probe() -> Self {
        let real = kernel_abi();
        let pretended = std::env::var(PRETEND_ABI_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        Self {
            abi: pretended.map_or(real, |p| p.min(real)),
        }
    }

    /// Support for ABI `abi`, as if the kernel offered it.
    pub fn pretend(abi: u32) -> Self {
        Self { abi }
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

    /// One line saying what is enforced under a policy asking for `network`,
    /// for `doctor` and `status`.
    pub fn describe(self, network: SandboxNetwork) -> String {
        if !self.filesystem() {
            return "no Landlock on this kernel: shell commands and MCP servers run unconfined (resource limits \
                    only)"
                .into();
        }
        let net = match (network, self.network()) {
            (SandboxNetwork::Any, _) => "network open",
            (SandboxNetwork::None, true) => "network closed (TCP connect and bind)",
            (SandboxNetwork::None, false) => "network NOT closed (needs Landlock ABI 4)",
        };
        format!(
            "shell commands and MCP servers confined by Landlock ABI {}: files beyond the workspace and the \
             system refused, {net}",
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
        assert!(none.describe(SandboxNetwork::None).contains("unconfined"));
    }

    #[test]
    fn network_rules_need_abi_four() {
        assert!(!Support::pretend(3).network());
        assert!(Support::pretend(4).network());
        assert!(
            Support::pretend(3)
                .describe(SandboxNetwork::None)
                .contains("NOT closed")
        );
        assert!(
            Support::pretend(7)
                .describe(SandboxNetwork::None)
                .contains("network closed")
        );
    }
}
