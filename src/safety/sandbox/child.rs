//! The part of confinement that runs in the child, between `fork` and
//! `exec`.
//!
//! After `fork` in a multi-threaded parent, the child may only make
//! async-signal-safe calls: no allocation, no lock. So everything that
//! allocates or opens files (the ruleset, its rules' path descriptors, the
//! seccomp filter, the namespace's id maps, the temporary directory) is done
//! in the parent before the spawn, and the child only makes system calls, in
//! this order: `setrlimit`; joining its control group (a `write` to a
//! descriptor opened in the parent); the PID namespace (`isolate.rs`: `unshare`,
//! two forks, the id maps written); `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self` on the ruleset's descriptor, then closes the
//! descriptor; last the seccomp filter. Before the namespace, it closes
//! what it inherited and does not need (`inherited.rs`).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use seccompiler::BpfProgram;

use super::isolate::Isolation;
use super::limits::Limits;

/// What the child applies to itself.
pub(super) struct InChild {
    /// The Landlock ruleset's descriptor, made in the parent; `None` where
    /// the kernel enforces nothing. Taken on first use: the hook runs once,
    /// in the child.
    ruleset: Option<OwnedFd>,
    limits: Limits,
    /// Fail the spawn when the ruleset could not be enforced at all.
    strict: bool,
    /// The PID namespace to start in, where the kernel allows one.
    isolation: Option<Isolation>,
    /// The seccomp filter to install last, when Unix sockets are refused.
    filter: Option<Arc<BpfProgram>>,
    /// The `cgroup.procs` of the control groups to join first.
    joins: Vec<libc::c_int>,
}

impl InChild {
    pub(super) fn new(ruleset: Option<OwnedFd>, limits: Limits, strict: bool) -> Self {
        Self {
            ruleset,
            limits,
            strict,
            isolation: None,
            filter: None,
            joins: Vec::new(),
        }
    }

    /// Also joins the control groups whose `cgroup.procs` are open as
    /// `joins`, before anything else is started.
    pub(super) fn joining(self, joins: Vec<libc::c_int>) -> Self {
        Self { joins, ..self }
    }

    /// Also starts the process in a PID namespace of its own.
    pub(super) fn isolated(self, isolation: Option<Isolation>) -> Self {
        Self { isolation, ..self }
    }

    /// Also installs `filter`.
    pub(super) fn filtered(self, filter: Option<Arc<BpfProgram>>) -> Self {
        Self { filter, ..self }
    }

    /// Applies the limits, the namespace, `no_new_privs`, the ruleset and the
    /// filter to the calling process. Only system calls happen here (see the
    /// module doc).
    pub(super) fn enter(&mut self) -> io::Result<()> {
        self.limits.apply()?;
        super::cgroup::join(&self.joins)?;
        let ruleset = self.ruleset.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        super::inherited::close_inherited(&[ruleset]);
        if let Some(isolation) = &self.isolation {
            isolation.enter(ruleset)?;
        }
        drop_capabilities();
        self.restrict()?;
        match &self.filter {
            Some(filter) => super::seccomp::install(filter),
            None => Ok(()),
        }
    }

    fn restrict(&mut self) -> io::Result<()> {
        rustix::thread::set_no_new_privs(true).map_err(io::Error::from)?;
        match self.ruleset.take() {
            Some(ruleset) => {
                // SAFETY: the ruleset's descriptor, no flags.
                let restricted =
                    unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0 as libc::c_uint) };
                if restricted != 0 {
                    return Err(io::Error::from_raw_os_error(libc::EPERM));
                }
                Ok(())
            }
            // The kernel could enforce nothing.
            None if self.strict => Err(io::Error::from_raw_os_error(libc::EPERM)),
            // Without Landlock, still no setuid gains.
            None => Ok(()),
        }
    }
}

/// Empties the capability bounding set, the ambient set and the inheritable
/// set, so that a command the daemon runs as root gains no capability at
/// `exec` (loading a module, tracing any process, changing the network):
/// only its uid is root's. Whether or not it runs in a namespace.
fn drop_capabilities() {
    for capability in 0..=63 {
        // SAFETY: a prctl on this process; a capability the kernel does not
        // know, or one already dropped, only fails.
        unsafe {
            libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong);
        }
    }
    // SAFETY: prctl and capget/capset on structs on this stack.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0 {
            for set in &mut data {
                set.inheritable = 0;
            }
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr());
        }
    }
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
