//! A PID namespace for each confined process, so that nothing it starts
//! outlives it, with a mount namespace for the `/proc` it sees.
//!
//! A process group is easy to leave (`setsid -f`), and a sleeping process
//! uses no CPU, so neither a group kill nor a CPU limit ends what a command
//! left behind. A PID namespace cannot be left: when its first process (its
//! "init") ends, the kernel kills every process in it. So the child that
//! `spawn` forks (the *keeper*) unshares a new PID namespace (and, for a user
//! without the privilege, a user namespace mapping only its own ids), then
//! forks the namespace's init, which forks the command itself:
//!
//! ```text
//! daemon ── keeper (outside, waits) ── init (pid 1, reaps) ── command (pid 2) ── …
//! ```
//!
//! - The command is pid 2, not 1, so the signals its process group gets
//!   (a `SIGTERM` to an MCP server) reach it as they would anywhere; an init
//!   ignores signals it has no handler for.
//! - The init mounts the namespace's own `/proc` (the daemon's is never
//!   granted) and lets the command's Landlock ruleset read it, makes itself
//!   undumpable (it is a copy of the daemon), and empties the command's
//!   capability bounding set, so a root daemon's command is root by uid
//!   only.
//! - The init reaps every orphan, and ends when the command ends, which ends
//!   the namespace; it hands the command's exit status to the keeper through
//!   a pipe.
//! - The keeper ends as the command did (same exit code, or the same signal),
//!   so the caller sees the command's status. It ignores the polite signals;
//!   when it is killed (`SIGKILL` at a timeout, or the caller dropping the
//!   child), the init gets `SIGKILL` as its parent-death signal, and the
//!   namespace goes with it.
//! - The keeper and the init close every descriptor they inherited, so the
//!   caller's `spawn` returns once the command has `exec`uted, and the output
//!   pipes end with the command's namespace.
//!
//! All of this runs between `fork` and `exec` in a multi-threaded parent, so
//! it makes only system calls (see `child.rs`); what it writes is prepared in
//! the parent ([`Isolation::prepare`]).
//!
//! Whether the kernel lets the daemon do this is probed once, at start
//! ([`Isolation::available`]); where it does not (a container that forbids
//! namespaces, say), commands run as before, killed by process group, and
//! `doctor` and `status` say so.

use std::ffi::CStr;
use std::io;

/// How to isolate a child. The child decides, after any switch of user the
/// caller asked `spawn` for, whether it needs a user namespace too (only
/// root may make a PID namespace without one), and writes its own ids'
/// maps, formatted on its stack.
#[derive(Clone, Copy, Debug, Default)]
pub struct Isolation;

const SETGROUPS: &CStr = c"/proc/self/setgroups";
const UID_MAP: &CStr = c"/proc/self/uid_map";
const GID_MAP: &CStr = c"/proc/self/gid_map";

/// Signals the keeper ignores: a group's polite stop is for the command.
const IGNORED_BY_KEEPER: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

impl Isolation {
    /// The isolation of a child.
    pub fn prepare() -> Self {
        Self
    }

    /// Whether the kernel lets this process isolate a child: a `/bin/true`
    /// started isolated ran and ended well.
    pub fn available(&self) -> bool {
        use std::os::unix::process::CommandExt;
        let isolation = *self;
        let mut command = std::process::Command::new("/bin/true");
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `enter` makes only system calls (see the module doc).
        unsafe {
            command.pre_exec(move || isolation.enter(-1));
        }
        command.status().is_ok_and(|status| status.success())
    }

    /// In the child that `spawn` forked: returns only in the command's
    /// process, inside the new namespace, or with the error that kept the
    /// namespace from being made. The keeper and the init never return.
    /// The namespace's own `/proc` is added to the Landlock ruleset whose
    /// descriptor is `ruleset` (none: -1), for reading.
    pub(super) fn enter(&self, ruleset: libc::c_int) -> io::Result<()> {
        // SAFETY: system calls on memory on this stack.
        unsafe {
            let (uid, gid) = (libc::geteuid(), libc::getegid());
            let unprivileged = uid != 0;
            let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
            if unprivileged {
                flags |= libc::CLONE_NEWUSER;
            }
            check(libc::unshare(flags))?;
            if unprivileged {
                // A child that `spawn` switched from root to another user is
                // not dumpable, which leaves its own `/proc/self` files to
                // root; it is about to `exec`, which sets this anew.
                libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong);
                write_file(SETGROUPS, b"deny")?;
                write_file(GID_MAP, IdMap::own(gid).as_bytes())?;
                write_file(UID_MAP, IdMap::own(uid).as_bytes())?;
            }
            // From here on a copy of the daemon that runs no program: nothing
            // of the daemon's user may read or trace it.
            libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong);
            let mut status_pipe = [0 as libc::c_int; 2];
            check(libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC))?;
            let [read_end, write_end] = status_pipe;
            match check(libc::fork())? {
                0 => {
                    libc::close(read_end);
                    init(write_end, ruleset)
                }
                init_pid => keeper(init_pid, read_end),
            }
        }
    }
}

/// The namespace's pid 1: forks the command (which returns to `exec`), then
/// reaps until the command ends, and reports its status to the keeper.
unsafe fn init(status_out: libc::c_int, ruleset: libc::c_int) -> io::Result<()> {
    // SAFETY (whole function): system calls only.
    unsafe {
        // Dies with the keeper, and with it the whole namespace.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        libc::prctl(libc::PR_SET_NAME, c"pp-tool-init".as_ptr());
        // A copy of the daemon's memory, environment included: nothing of
        // the daemon's user may read or trace it.
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong);
        if own_proc() && ruleset >= 0 {
            grant_proc(ruleset);
        }
        let command = libc::fork();
        if command == 0 {
            libc::close(status_out);
            return Ok(());
        }
        if command < 0 {
            libc::_exit(127);
        }
        super::inherited::close_all_but(status_out);
        let mut status: libc::c_int = 0;
        loop {
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == command {
                break;
            }
            if reaped < 0 && *libc::__errno_location() != libc::EINTR {
                status = 127 << 8;
                break;
            }
        }
        let bytes = status.to_ne_bytes();
        libc::write(status_out, bytes.as_ptr().cast(), bytes.len());
        // Ending here ends every process left in the namespace.
        libc::_exit(0)
    }
}

/// Outside the namespace: waits for the init's report of the command's
/// status, then ends the same way.
unsafe fn keeper(init: libc::pid_t, status_in: libc::c_int) -> ! {
    // SAFETY (whole function): system calls only.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"pp-tool-keeper".as_ptr());
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong);
        for signal in IGNORED_BY_KEEPER {
            libc::signal(signal, libc::SIG_IGN);
        }
        super::inherited::close_all_but(status_in);
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < bytes.len() {
            let read = libc::read(status_in, bytes[got..].as_mut_ptr().cast(), bytes.len() - got);
            if read > 0 {
                got += read as usize;
            } else if read == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let mut init_status: libc::c_int = 0;
        while libc::waitpid(init, &mut init_status, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
        let status = if got == bytes.len() {
            libc::c_int::from_ne_bytes(bytes)
        } else {
            init_status
        };
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal)
        }
        libc::_exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            127
        })
    }
}

/// Mounts a `/proc` of the namespace's own over the daemon's, in the
/// namespace's own mount table (made private first, so nothing reaches the
/// machine's): `ps`, `free` and `uptime` read it, and it shows no process
/// outside the namespace, the daemon least of all. False where the kernel
/// refuses (a container whose `/proc` is partly covered, say): the command
/// then runs without one.
unsafe fn own_proc() -> bool {
    // SAFETY (whole function): mount(2) with static strings.
    unsafe {
        let private = libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        );
        private == 0
            && libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) == 0
    }
}

/// Landlock's `struct landlock_path_beneath_attr` (packed in the kernel's
/// header).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// Reading files and listing folders (`LANDLOCK_ACCESS_FS_READ_FILE` and
/// `READ_DIR`).
const READ_ACCESS: u64 = (1 << 2) | (1 << 3);

/// Lets the ruleset read the namespace's `/proc`. (A rule made in the
/// parent would name the daemon's `/proc`, another file system.)
unsafe fn grant_proc(ruleset: libc::c_int) {
    // SAFETY (whole function): open, the Landlock call on a struct on this
    // stack, close.
    unsafe {
        let proc = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if proc < 0 {
            return;
        }
        let rule = PathBeneath {
            allowed_access: READ_ACCESS,
            parent_fd: proc,
        };
        const LANDLOCK_RULE_PATH_BENEATH: libc::c_uint = 1;
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneath,
            0 as libc::c_uint,
        );
        libc::close(proc);
    }
}

/// One line of an id map, `ID ID 1`: the id maps to itself, and nothing
/// else is mapped. Formatted without allocating.
struct IdMap {
    text: [u8; 40],
    len: usize,
}

impl IdMap {
    fn own(id: u32) -> Self {
        let mut digits = [0u8; 10];
        let mut count = 0;
        let mut rest = id;
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let mut map = Self { text: [0; 40], len: 0 };
        for _ in 0..2 {
            for digit in digits[..count].iter().rev() {
                map.push(*digit);
            }
            map.push(b' ');
        }
        map.push(b'1');
        map.push(b'\n');
        map
    }

    fn push(&mut self, byte: u8) {
        self.text[self.len] = byte;
        self.len += 1;
    }

    fn as_bytes(&self) -> &[u8] {
        &self.text[..self.len]
    }
}

/// Writes `bytes` to the file at `path` in one call.
unsafe fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a path and a buffer that live through the calls.
    unsafe {
        let fd = check(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(error);
        }
        Ok(())
    }
}

/// A system call's result, or the error it set.
fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_maps_to_itself_alone() {
        assert_eq!(IdMap::own(0).as_bytes(), b"0 0 1\n");
        assert_eq!(IdMap::own(1000).as_bytes(), b"1000 1000 1\n");
        assert_eq!(IdMap::own(u32::MAX).as_bytes(), b"4294967295 4294967295 1\n");
    }
}
