//! The seccomp filter of a confined process: no Unix sockets of its own.
//!
//! Landlock confines what a process opens by path, but before its ABI 9 it
//! does not look at `connect()` to a Unix socket's path. Through one, a
//! process of the daemon's user reaches everything that user's sockets
//! answer: the session bus (whose systemd starts unconfined programs), an
//! ssh-agent, `docker.sock`. So unless a setting grants Unix sockets, the
//! filter answers `socket(AF_UNIX, …)` with `EACCES`, and io_uring, which
//! makes sockets without that call. A `socketpair` of stream sockets stays
//! open: a connected pair reaches nothing outside (runtimes such as Node's
//! use it for their children's stdio); a datagram pair, which could send to
//! any socket by path, does not. The filter is compiled here,
//! in the parent; the child only installs it (two `prctl` calls, no
//! allocation).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// The error a refused `socket` call gets: "Permission denied", which the
/// refusal hint recognises.
const REFUSED: u32 = libc::EACCES as u32;

/// The filter refusing Unix sockets, for the machine's architecture; `None`
/// on one seccompiler cannot build for (the process then runs without it).
pub(super) fn no_unix_sockets() -> Option<BpfProgram> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).ok()?;
    let unix = || SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64).ok();
    let datagram = SeccompCondition::new(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(0xf),
        libc::SOCK_DGRAM as u64,
    )
    .ok()?;
    let any_unix = SeccompRule::new(vec![unix()?]).ok()?;
    // A connected pair of stream sockets reaches nothing outside; a datagram
    // one could send to any socket by path (`/dev/log`, journald's).
    let unix_datagram_pair = SeccompRule::new(vec![unix()?, datagram]).ok()?;
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![any_unix.clone()]);
    rules.insert(libc::SYS_socketpair, vec![unix_datagram_pair.clone()]);
    // io_uring makes and connects sockets without `socket(2)`: refused
    // whole (an empty list matches the call itself).
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    // The same calls through the x32 ABI on x86_64 (its numbers carry bit
    // 30), where a kernel offers that ABI.
    if cfg!(target_arch = "x86_64") {
        rules.insert(libc::SYS_socket | 0x4000_0000, vec![any_unix]);
        rules.insert(libc::SYS_socketpair | 0x4000_0000, vec![unix_datagram_pair]);
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(REFUSED), arch).ok()?;
    filter.try_into().ok()
}

/// Installs `filter` on the calling process (in the child, before `exec`):
/// only system calls. Through `prctl`, which a service manager's own
/// system call filter lets through where it may refuse `seccomp(2)`.
pub(super) fn install(filter: &BpfProgram) -> std::io::Result<()> {
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?,
        // seccompiler's `sock_filter` has the kernel's layout, as libc's does.
        filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: a filter program that lives through the calls; the kernel
    // copies it.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &program as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_is_built_for_this_machine() {
        let filter = no_unix_sockets().expect("x86_64 and aarch64 are supported");
        assert!(filter.len() > 4, "an architecture check and the rule: {}", filter.len());
    }
}
