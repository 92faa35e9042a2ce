//! The sandbox's `doctor` line: which Landlock ABI the kernel offers and
//! what `[tools.sandbox]` gets enforced with it.

use super::probe::Support;
use crate::config::{SandboxConfig, SandboxNetwork};
use crate::foundation::checkup::{Check, Level};

/// What to do on a kernel without Landlock.
const FIX_NO_LANDLOCK: &str = "use a kernel with Landlock (Linux 5.13 or later, `landlock` in the `lsm=` boot list)";

/// The line for `config` on a kernel offering `support`: ok when the tool
/// processes are confined as asked; degraded when they run unconfined, or
/// with the network open although `network = "none"`; failed when
/// `require` refuses them all.
pub fn check(config: &SandboxConfig, support: Support, cgroups: Option<&str>) -> Check {
    let detail = support.describe(config.network, config.unix_sockets.len(), cgroups);
    if !support.filesystem() {
        return if config.require {
            Check::new(
                "sandbox",
                Level::Failed,
                format!("{detail}; tools.sandbox.require refuses every tool process"),
                Some(FIX_NO_LANDLOCK.into()),
            )
        } else {
            Check::new("sandbox", Level::Degraded, detail, Some(FIX_NO_LANDLOCK.into()))
        };
    }
    if config.network == SandboxNetwork::None && !support.network() {
        return Check::new(
            "sandbox",
            Level::Degraded,
            detail,
            Some("a kernel with Landlock ABI 4 (Linux 6.7) closes the network".into()),
        );
    }
    if !support.isolates() {
        return Check::new("sandbox", Level::Degraded, detail, Some(FIX_NO_NAMESPACES.into()));
    }
    Check::new("sandbox", Level::Ok, detail, None)
}

/// What to do where the kernel refused the daemon a PID namespace.
const FIX_NO_NAMESPACES: &str = "allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, \
     or an AppArmor profile granting `userns` to passepartout), or run the daemon where it may make namespaces";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_is_enforced() {
        let defaults = SandboxConfig::default();
        let line = check(&defaults, Support::pretend(7).isolating(true), None);
        assert_eq!(line.level, Level::Ok);
        assert_eq!(
            check(&defaults, Support::pretend(7), None).level,
            Level::Degraded,
            "no namespaces"
        );
        assert!(line.detail.contains("Landlock ABI 7"), "{}", line.detail);
        assert_eq!(check(&defaults, Support::pretend(0), None).level, Level::Degraded);
        let required = SandboxConfig {
            require: true,
            ..SandboxConfig::default()
        };
        let refused = check(&required, Support::pretend(0), None);
        assert_eq!(refused.level, Level::Failed);
        assert!(refused.detail.contains("refuses"), "{}", refused.detail);
        let closed = SandboxConfig {
            network: SandboxNetwork::None,
            ..SandboxConfig::default()
        };
        assert_eq!(
            check(&closed, Support::pretend(3).isolating(true), None).level,
            Level::Degraded
        );
    }
}
