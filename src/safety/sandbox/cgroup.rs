//! A control group of its own for each confined process, so that its memory
//! and process limits hold for the whole command (eight children under a
//! per-process limit of 512 MiB still held 3.6 GiB), and so that whatever is
//! left in it when the command is over can be found and ended.
//!
//! The daemon needs a cgroup it may make children in:
//! - cgroup v2, the daemon's own group delegated to it (systemd's
//!   `Delegate=yes`, or root): it moves itself into a leaf (`daemon`), as the
//!   "no internal processes" rule asks, enables the memory and pids
//!   controllers for its children, and makes one child per command;
//! - cgroup v1 (older systems and containers, run as root): one child per
//!   command in its own memory group, and in its pids group.
//!
//! [`Cgroups::find`] says which, once at start; where neither can be had
//! (an ordinary user without delegation), the limits stay per process, and
//! `doctor` and `status` say so. The parent makes the command's group and
//! opens its `cgroup.procs` before `fork`; the child writes `0` (itself)
//! there, a system call, before it starts anything.

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The name of a command's group, followed by the daemon's pid, the finder's
/// instance and a count.
const PREFIX: &str = "passepartout-tool-";

/// How many times a group that is still emptying is tried again at removal,
/// a millisecond apart: its processes were killed and are being reaped.
const REMOVE_TRIES: u32 = 100;

/// Where the daemon makes its commands' groups.
#[derive(Debug)]
pub struct Cgroups {
    kind: Kind,
    /// Tells this finder's groups from another's in the same process (the
    /// tests run several daemons in one), beside the pid.
    instance: u32,
    made: AtomicU64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// The daemon's delegated v2 group, with memory and pids enabled for
    /// its children.
    V2(PathBuf),
    /// The daemon's v1 memory group, and its pids group where there is one.
    V1 { memory: PathBuf, pids: Option<PathBuf> },
}

/// The limits a command's group gets; `None` for none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupLimits {
    pub memory_bytes: Option<u64>,
    pub processes: Option<u64>,
}

impl Cgroups {
    /// Where this process may make groups, if anywhere. With `claim` (the
    /// daemon), a delegated v2 group is made ready (the daemon moved into a
    /// leaf, controllers enabled) and groups an earlier run left behind
    /// after a crash, now empty, are removed; without (`doctor`), nothing is
    /// changed and a v2 group that could be made ready counts.
    pub fn find(claim: bool) -> Option<Cgroups> {
        let own = fs::read_to_string("/proc/self/cgroup").ok()?;
        let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let kind = v2(&own, &mounts, claim).or_else(|| v1(&own, &mounts))?;
        let cgroups = Cgroups {
            kind,
            instance: rand::random(),
            made: AtomicU64::new(0),
        };
        if claim {
            for dir in cgroups.parents() {
                sweep(&dir);
            }
        }
        Some(cgroups)
    }

    /// A short name for what is used, for `doctor` and `status`.
    pub fn describe(&self) -> &'static str {
        match self.kind {
            Kind::V2(_) => "cgroup v2",
            Kind::V1 { .. } => "cgroup v1",
        }
    }

    fn parents(&self) -> Vec<PathBuf> {
        match &self.kind {
            Kind::V2(dir) => vec![dir.clone()],
            Kind::V1 { memory, pids } => [Some(memory.clone()), pids.clone()].into_iter().flatten().collect(),
        }
    }

    /// Makes the group of one command, with `limits`.
    pub fn make(&self, limits: GroupLimits) -> io::Result<CommandGroup> {
        let name = format!(
            "{PREFIX}{}-{:08x}-{}",
            std::process::id(),
            self.instance,
            self.made.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = CommandGroup {
            dirs: Vec::new(),
            joins: Vec::new(),
            v2: matches!(self.kind, Kind::V2(_)),
        };
        for parent in self.parents() {
            let dir = parent.join(&name);
            fs::create_dir(&dir)?;
            group.dirs.push(dir.clone());
            match &self.kind {
                Kind::V2(_) => {
                    if let Some(bytes) = limits.memory_bytes {
                        write(&dir.join("memory.max"), &bytes.to_string())?;
                        // Without swap, the limit is the limit.
                        let _ = write(&dir.join("memory.swap.max"), "0");
                        // At the limit, the whole command goes, not one process.
                        let _ = write(&dir.join("memory.oom.group"), "1");
                    }
                    if let Some(count) = limits.processes {
                        write(&dir.join("pids.max"), &count.to_string())?;
                    }
                }
                Kind::V1 { memory, .. } if parent == *memory => {
                    if let Some(bytes) = limits.memory_bytes {
                        write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
                        let _ = write(&dir.join("memory.memsw.limit_in_bytes"), &bytes.to_string());
                    }
                }
                Kind::V1 { .. } => {
                    if let Some(count) = limits.processes {
                        write(&dir.join("pids.max"), &count.to_string())?;
                    }
                }
            }
            group.joins.push(
                fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))?
                    .into(),
            );
        }
        Ok(group)
    }
}

/// One command's group (in each hierarchy used). Dropping it ends every
/// process still in it and removes it.
#[derive(Debug)]
pub struct CommandGroup {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each, open for the child to join.
    joins: Vec<OwnedFd>,
    v2: bool,
}

impl CommandGroup {
    /// The descriptors the child writes itself into.
    pub(super) fn joins(&self) -> Vec<libc::c_int> {
        self.joins.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// The processes in the group now.
    fn members(&self) -> Vec<i32> {
        self.dirs
            .iter()
            .filter_map(|dir| fs::read_to_string(dir.join("cgroup.procs")).ok())
            .flat_map(|text| {
                text.lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect()
    }
}

/// Joins the groups whose `cgroup.procs` are open as `joins`: in the child,
/// before `exec`, with system calls only.
pub(super) fn join(joins: &[libc::c_int]) -> io::Result<()> {
    for &fd in joins {
        // SAFETY: writing a static byte to a descriptor the parent opened.
        let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        if written != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for CommandGroup {
    fn drop(&mut self) {
        if self.v2 && write(&self.dirs[0].join("cgroup.kill"), "1").is_ok() {
            // The kernel ends them all.
        } else {
            for pid in self.members() {
                // SAFETY: a signal to a process of this group.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        for dir in self.dirs.iter().rev() {
            for _ in 0..REMOVE_TRIES {
                match fs::remove_dir(dir) {
                    Err(error) if error.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// The daemon's delegated v2 group, made ready for children: the memory and
/// pids controllers enabled below it, the daemon moved into a leaf first.
fn v2(own: &str, mounts: &str, claim: bool) -> Option<Kind> {
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mount = mounts
        .lines()
        .find(|line| {
            line.split(" - ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with("cgroup2 "))
        })?
        .split(' ')
        .nth(4)?;
    let mut dir = PathBuf::from(mount).join(path.trim_start_matches('/'));
    // Already a leaf we made at an earlier start of this process's group.
    if dir.file_name().is_some_and(|name| name == "daemon") {
        dir.pop();
    }
    let controllers = fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    if !["memory", "pids"]
        .iter()
        .all(|c| controllers.split_whitespace().any(|have| have == *c))
    {
        return None;
    }
    let enabled = |dir: &Path| {
        fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|text| text.contains("memory") && text.contains("pids"))
    };
    if !enabled(&dir) {
        if !claim {
            let writable = rustix::fs::access(dir.join("cgroup.subtree_control"), rustix::fs::Access::WRITE_OK);
            return writable.is_ok().then_some(Kind::V2(dir));
        }
        let leaf = dir.join("daemon");
        if !leaf.is_dir() {
            fs::create_dir(&leaf).ok()?;
        }
        write(&leaf.join("cgroup.procs"), "0").ok()?;
        write(&dir.join("cgroup.subtree_control"), "+memory +pids").ok()?;
    }
    let probe = dir.join(format!("{PREFIX}probe-{}", std::process::id()));
    let usable = fs::create_dir(&probe).is_ok() && probe.join("memory.max").exists();
    let _ = fs::remove_dir(&probe);
    usable.then_some(Kind::V2(dir))
}

/// The daemon's v1 memory group (and pids group), where it may make
/// children.
fn v1(own: &str, mounts: &str) -> Option<Kind> {
    let dir = |controller: &str| -> Option<PathBuf> {
        let path = own.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, list, path) = (fields.next()?, fields.next()?, fields.next()?);
            list.split(',').any(|c| c == controller).then_some(path)
        })?;
        let mount = mounts.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut right = right.split(' ');
            let (kind, options) = (right.next()?, right.nth(1)?);
            (kind == "cgroup" && options.split(',').any(|o| o == controller)).then(|| left.split(' ').nth(4))?
        })?;
        let dir = PathBuf::from(mount).join(path.trim_start_matches('/'));
        let probe = dir.join(format!("{PREFIX}probe-{}", std::process::id()));
        let usable = fs::create_dir(&probe).is_ok();
        let _ = fs::remove_dir(&probe);
        usable.then_some(dir)
    };
    Some(Kind::V1 {
        memory: dir("memory")?,
        pids: dir("pids"),
    })
}

/// Removes the empty groups an earlier run left in `parent`: those named
/// after a process that is gone. (A group of a live daemon, this one
/// included, may be empty only because its command has yet to join it.)
fn sweep(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(owner.to_string()).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";

    #[test]
    fn a_v1_group_is_found_under_each_controllers_mount() {
        // The paths exist nowhere here: the probe's mkdir fails, so nothing
        // is found, which is the answer for a group one may not write.
        let own = "8:pids:/\n4:memory:/no/such/group-for-a-test\n0::/\n";
        assert_eq!(v1(own, MOUNTS), None);
        assert_eq!(v2(own, MOUNTS, false), None, "no controllers in that v2 group");
    }
}
