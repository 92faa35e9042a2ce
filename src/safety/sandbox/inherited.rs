//! What a confined process lets go of first: every file and folder it
//! inherited from the daemon, but its standard streams and those it was
//! handed on purpose.
//!
//! Between `fork` and `exec` a child holds a copy of each of the daemon's
//! descriptors, the data directory's lock and the store's among them. The
//! daemon marks them close-on-exec, but the child of a PID namespace forks
//! twice more before anything is `exec`uted (`isolate.rs`), and a copy of a
//! lock file's descriptor keeps the lock held: a daemon restarted at that
//! moment would find its own data directory in use. So they are closed at
//! once. Pipes and sockets stay: the standard streams are pipes, the
//! standard library reports a failed `exec` through a socket, and neither
//! holds a lock.
//!
//! Only system calls: the list of descriptors is read from `/proc/self/fd`
//! with `getdents64` into a buffer on the stack.

use std::ffi::CStr;

const FDS: &CStr = c"/proc/self/fd";

/// Closes every inherited descriptor above the standard streams that is a
/// file or a folder and not in `keep`. Where `/proc` cannot be read, nothing is
/// closed (the descriptors go at `exec` as before).
pub(super) fn close_inherited(keep: &[libc::c_int]) {
    close_listed(keep, true);
}

/// Closes every descriptor but `keep`, standard streams included: for the
/// namespace's keeper and init, which run no program. By `close_range`, or
/// where the kernel lacks it (before Linux 5.9) one by one from the list in
/// `/proc`.
pub(super) fn close_all_but(keep: libc::c_int) {
    // SAFETY: closing descriptors this process holds.
    let closed = unsafe {
        let keep = keep as libc::c_uint;
        (keep == 0 || libc::syscall(libc::SYS_close_range, 0 as libc::c_uint, keep - 1, 0 as libc::c_uint) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0 as libc::c_uint) == 0
    };
    if !closed {
        close_listed(&[keep], false);
    }
}

/// Closes the descriptors listed in `/proc/self/fd` but `keep`: with
/// `files_only`, only files and folders above the standard streams.
fn close_listed(keep: &[libc::c_int], files_only: bool) {
    // SAFETY: system calls on a buffer and a stat on this stack.
    unsafe {
        let dir = libc::open(FDS.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            return;
        }
        let mut buffer = [0u8; 4096];
        loop {
            let read = libc::syscall(libc::SYS_getdents64, dir, buffer.as_mut_ptr(), buffer.len());
            if read <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < read as usize {
                // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
                // d_type u8, then the name, NUL-terminated.
                let record = buffer.as_ptr().add(at);
                let length = u16::from_ne_bytes([*record.add(16), *record.add(17)]) as usize;
                let name = record.add(19);
                if let Some(fd) = number(name) {
                    let ours = (files_only && fd <= 2) || fd == dir || keep.contains(&fd);
                    if !ours && (!files_only || is_file(fd)) {
                        libc::close(fd);
                    }
                }
                at += length.max(1);
            }
        }
        libc::close(dir);
    }
}

/// The descriptor number a directory entry's NUL-terminated name spells.
unsafe fn number(name: *const u8) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut digits = 0;
    loop {
        // SAFETY: the name is NUL-terminated within its record.
        let byte = unsafe { *name.add(digits) };
        match byte {
            0 => return (digits > 0).then_some(value),
            b'0'..=b'9' => {
                value = value.checked_mul(10)?.checked_add(libc::c_int::from(byte - b'0'))?;
                digits += 1;
            }
            _ => return None,
        }
    }
}

/// Whether `fd` is a regular file or a folder.
fn is_file(fd: libc::c_int) -> bool {
    // SAFETY: fstat into a zeroed struct on the stack.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        return false;
    }
    let kind = stat.st_mode & libc::S_IFMT;
    kind == libc::S_IFREG || kind == libc::S_IFDIR
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn files_go_and_pipes_sockets_and_kept_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let lock = std::fs::File::create(dir.path().join("lock")).unwrap();
        let kept = std::fs::File::create(dir.path().join("kept")).unwrap();
        let (reader, writer) = std::io::pipe().unwrap();
        let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let (lock, kept, reader, writer) = (
            lock.as_raw_fd(),
            kept.as_raw_fd(),
            reader.as_raw_fd(),
            writer.as_raw_fd(),
        );
        let socket = socket.as_raw_fd();
        // In a child of its own, whose descriptors are its own copies.
        // SAFETY: the child makes system calls only, then exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            close_inherited(&[kept]);
            let open = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
            let fine = !open(lock) && open(kept) && open(reader) && open(writer) && open(socket) && open(1);
            unsafe { libc::_exit(if fine { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for the child just made.
        unsafe { libc::waitpid(child, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{status}");
    }
}
