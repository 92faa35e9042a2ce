//! The resource limits of a confined process (`setrlimit`), set in the child
//! before `exec`: CPU seconds, writable memory, the user's processes and the
//! largest file written.

use std::io;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use crate::config::SandboxConfig;

/// Extra CPU seconds between the soft limit (SIGXCPU) and the hard one
/// (SIGKILL), for a process that catches SIGXCPU.
const CPU_GRACE_S: u64 = 5;

/// Limits for one process; `None` leaves the daemon's own in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub cpu_s: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub processes: Option<u64>,
    pub file_size_bytes: Option<u64>,
}

impl Limits {
    /// The limits `config` asks for (0 meaning none).
    pub fn from_config(config: &SandboxConfig) -> Self {
        let nonzero = |v: u64| (v > 0).then_some(v);
        let mib = |v: u64| nonzero(v).map(|v| v.saturating_mul(1024 * 1024));
        Self {
            cpu_s: nonzero(config.cpu_s),
            memory_bytes: mib(config.memory_mb),
            processes: nonzero(config.processes),
            file_size_bytes: mib(config.file_size_mb),
        }
    }

    /// These limits without the CPU one: for a server meant to run for days.
    pub fn without_cpu(self) -> Self {
        Self { cpu_s: None, ..self }
    }

    /// Sets the limits on the calling process. Runs between fork and exec,
    /// so it makes only system calls: no allocation, no lock.
    pub(super) fn apply(&self) -> io::Result<()> {
        if let Some(cpu) = self.cpu_s {
            lower(Resource::Cpu, cpu, cpu.saturating_add(CPU_GRACE_S))?;
        }
        if let Some(bytes) = self.memory_bytes {
            lower(Resource::Data, bytes, bytes)?;
        }
        if let Some(count) = self.processes {
            lower(Resource::Nproc, count, count)?;
        }
        if let Some(bytes) = self.file_size_bytes {
            lower(Resource::Fsize, bytes, bytes)?;
        }
        Ok(())
    }
}

/// Sets `resource` to at most `soft`/`hard`, never above the limit already in
/// place (raising a hard limit needs a privilege the daemon lacks).
fn lower(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let now = getrlimit(resource);
    let cap = |v: u64, max: Option<u64>| max.map_or(v, |m| v.min(m));
    let maximum = cap(hard, now.maximum);
    let current = cap(soft, Some(maximum));
    setrlimit(
        resource,
        Rlimit {
            current: Some(current),
            maximum: Some(maximum),
        },
    )
    .map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_means_no_limit() {
        let config = SandboxConfig {
            cpu_s: 0,
            memory_mb: 1,
            processes: 0,
            file_size_mb: 2,
            ..SandboxConfig::default()
        };
        let limits = Limits::from_config(&config);
        assert_eq!(limits.cpu_s, None);
        assert_eq!(limits.memory_bytes, Some(1024 * 1024));
        assert_eq!(limits.processes, None);
        assert_eq!(limits.file_size_bytes, Some(2 * 1024 * 1024));
        assert_eq!(Limits::from_config(&SandboxConfig::default()).without_cpu().cpu_s, None);
    }
}
