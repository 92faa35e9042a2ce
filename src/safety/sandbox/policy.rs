//! A sandbox policy: which folders a confined process may read, which it may
//! write, whether it may use the network, its resource limits; and the
//! [`Confinement`] prepared from it for one process.
//!
//! Read only: the system ([`SYSTEM_READ`]), a few devices, `allow_read` and
//! what the caller adds (what an MCP server's program needs of its
//! installation, `installation.rs`). Read and write:
//! the workspace, a temporary directory of the process's own (its `TMPDIR`,
//! removed when the confinement is dropped) and `allow_write`. Folders the
//! caller protects (the data and configuration directories) are carved out
//! of every grant, so a grant on `/etc` never reaches a configuration under
//! it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use seccompiler::BpfProgram;
use tempfile::TempDir;

use super::SandboxError;
use super::carve::carve;
use super::cgroup::{Cgroups, CommandGroup, GroupLimits};
use super::child::InChild;
use super::installation::reach;
use super::isolate::Isolation;
use super::limits::Limits;
use super::probe::Support;
use crate::config::{Config, McpServerConfig, SandboxConfig, SandboxNetwork, SecretPlaces};

/// The newest ABI whose rights the ruleset asks for; an older kernel
/// enforces what it has (the crate's best effort).
const RULESET_ABI: ABI = ABI::V9;

/// The system's folders every confined process may read (and run programs
/// from): programs, libraries, `/etc` for name resolution and certificates,
/// `/sys` for what the machine is (its processors, say), and the system's
/// journal (`journalctl`; the daemon logs no secret).
///
/// `/proc` too, but not the daemon's: a process in a PID namespace of its
/// own is granted the `/proc` mounted for that namespace (`isolate.rs`),
/// where `ps` and `free` find what they read and no process outside it
/// appears. Without namespaces `/proc` stays closed: Landlock keeps a
/// confined process from another's memory and open files, but not from its
/// environment, and the daemon's may hold a token (`allow_read = ["/proc"]`
/// if a tool needs `ps` there).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/sys",
    "/var/log/journal",
    "/run/log/journal",
];

/// Devices a shell line commonly writes to (`> /dev/null`). Not `/dev/tty`:
/// a process in the daemon's session could type into the terminal it was
/// started from (`TIOCSTI`).
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Files under the system's folders that are often links to elsewhere,
/// whose targets are granted for reading too: Landlock checks the target.
/// (`/etc/resolv.conf` into `/run/systemd/resolve/`, without which no name
/// resolves.)
const SYSTEM_LINKS: &[&str] = &["/etc/resolv.conf"];

/// Devices read for randomness.
const DEVICES_READ: &[&str] = &["/dev/urandom", "/dev/random"];

/// What confined processes may do.
#[derive(Clone, Debug)]
pub struct Policy {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    network: SandboxNetwork,
    /// Unix sockets a process may connect to, by path.
    unix_sockets: Vec<PathBuf>,
    require: bool,
    limits: Limits,
    support: Support,
    /// The filter refusing Unix sockets, compiled once.
    no_unix: Option<Arc<BpfProgram>>,
    /// Where each process gets a control group of its own, if anywhere.
    cgroups: Option<Arc<Cgroups>>,
    /// The MCP server whose process this policy confines; none for the
    /// shell's commands. Named in the refusal hint.
    server: Option<String>,
}

impl Policy {
    /// The policy `config` describes, on a kernel offering `support`.
    pub fn new(config: &SandboxConfig, support: Support) -> Self {
        Self {
            // Each read path is granted by what it resolves to.
            read: SYSTEM_READ
                .iter()
                .chain(SYSTEM_LINKS)
                .map(PathBuf::from)
                .chain(config.allow_read.iter().cloned())
                .collect(),
            write: config.allow_write.clone(),
            protected: Vec::new(),
            network: config.network,
            unix_sockets: config.unix_sockets.clone(),
            require: config.require,
            limits: Limits::from_config(config),
            support,
            no_unix: super::seccomp::no_unix_sockets().map(Arc::new),
            cgroups: None,
            server: None,
        }
    }

    /// The policy of the built-in tools' processes under `config` (read from
    /// `config_file`): `[tools.sandbox]`, the workspace writable, the data
    /// directory, the configuration's directory and the files where
    /// `secrets` are kept protected.
    pub fn for_tools(config: &Config, secrets: &SecretPlaces, config_file: Option<&Path>, support: Support) -> Self {
        let mut policy = Self::new(&config.tools.sandbox, support)
            .writable(config.workspace())
            .protecting(config.data_dir())
            .protecting(config.socket_key_path());
        for secret in secrets.files() {
            policy = policy.protecting(secret);
        }
        // A file named relative to where the daemon started (`--config
        // config.toml`) is in that folder.
        match config_file
            .and_then(|file| std::path::absolute(file).ok())
            .as_deref()
            .and_then(Path::parent)
        {
            Some(dir) => policy.protecting(dir),
            None => policy,
        }
    }

    /// This policy for the stdio server `server` whose program is in
    /// `programs` (resolved on its `PATH`, links followed, with a script's
    /// interpreter): its own lists and network added, what each program
    /// needs of its installation readable ([`reach`]: its folder, the
    /// `node_modules` tree or virtual environment it is part of, the
    /// installation around a `bin`), and no CPU limit, since it runs for
    /// days.
    pub fn for_server(&self, server: &McpServerConfig, programs: &[PathBuf]) -> Self {
        let mut policy = self.clone();
        policy.read.extend(server.allow_read.iter().cloned());
        policy.write.extend(server.allow_write.iter().cloned());
        policy.unix_sockets.extend(server.unix_sockets.iter().cloned());
        if let Some(network) = server.network {
            policy.network = network;
        }
        policy.limits = policy.limits.without_cpu();
        policy.server = Some(server.name.clone());
        let protected: Vec<PathBuf> = policy.protected.iter().filter_map(|p| p.canonicalize().ok()).collect();
        for program in programs {
            // A program kept in a protected folder (a script beside the
            // configuration) is granted alone, never the folder around it.
            let reached = Some(reach(program))
                .filter(|reached| !protected.iter().any(|p| reached.starts_with(p)))
                .unwrap_or_else(|| program.clone());
            if !policy.read.contains(&reached) {
                policy.read.push(reached);
            }
        }
        policy
    }

    /// Also lets processes read `path`.
    pub fn readable(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// Also lets processes read and write `path`.
    pub fn writable(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push(path.into());
        self
    }

    /// Keeps `path` out of every grant, however wide.
    pub fn protecting(mut self, path: impl Into<PathBuf>) -> Self {
        self.protected.push(path.into());
        self
    }

    /// Gives each process a control group of its own in `cgroups`, so that
    /// its memory and process limits hold for the whole command.
    pub fn with_cgroups(mut self, cgroups: Option<Cgroups>) -> Self {
        self.cgroups = cgroups.map(Arc::new);
        self
    }

    /// Replaces the resource limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The resource limits each process gets.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What the kernel offers.
    pub fn support(&self) -> Support {
        self.support
    }

    /// Whether processes run confined by Landlock (not only limited).
    pub fn confines(&self) -> bool {
        self.support.filesystem()
    }

    /// Whether TCP connect and bind are closed, as asked and enforced.
    pub fn network_closed(&self) -> bool {
        self.network == SandboxNetwork::None && self.support.network()
    }

    /// The ruleset in a few words, for the audit: what is enforced and the
    /// limits.
    pub fn summary(&self) -> String {
        let rules = if self.confines() {
            let network = if self.network_closed() { "closed" } else { "open" };
            format!("Landlock ABI {}, network {network}", self.support.abi())
        } else {
            "no Landlock, limits only".to_owned()
        };
        let limit = |name: &str, value: Option<u64>, unit: &str| value.map(|v| format!(", {name} {v}{unit}"));
        let limits = &self.limits;
        let parts: String = [
            limit("cpu", limits.cpu_s, " s"),
            limit("memory", limits.memory_bytes.map(|b| b / (1024 * 1024)), " MiB"),
            limit("processes", limits.processes, ""),
            limit("file size", limits.file_size_bytes.map(|b| b / (1024 * 1024)), " MiB"),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!("{rules}{parts}")
    }

    /// One line on what is enforced, for `doctor` and `status`.
    pub fn describe(&self) -> String {
        let cgroups = self.cgroups.as_deref().map(Cgroups::describe);
        self.support.describe(self.network, self.unix_sockets.len(), cgroups)
    }

    /// The sandbox's `doctor` line for this policy under `config`.
    pub fn check(&self, config: &SandboxConfig) -> crate::foundation::checkup::Check {
        super::check(config, self.support, self.cgroups.as_deref().map(Cgroups::describe))
    }

    /// The seccomp filter a process gets: Unix sockets refused unless some
    /// are granted (and then Landlock limits them by path where it can).
    fn filter(&self) -> Option<Arc<BpfProgram>> {
        self.unix_sockets.is_empty().then(|| self.no_unix.clone()).flatten()
    }

    /// The sentence added to a tool result that met a permission error, naming
    /// the rule that may have caused it.
    pub fn refusal_hint(&self) -> Option<String> {
        if !self.confines() {
            return None;
        }
        let network = match (self.network, self.support.network()) {
            (SandboxNetwork::None, true) => " and TCP connections are closed (`network = \"none\"`)",
            _ => "",
        };
        let also = self.also_read();
        Some(match &self.server {
            None => format!(
                "[sandbox: only the workspace and $TMPDIR are writable, only the system's folders{also} readable{network}; \
                 `tools.sandbox.allow_read` or `allow_write` can add a folder]"
            ),
            Some(name) => format!(
                "[sandbox: the server {name:?} runs confined: it may write only the workspace, its home and $TMPDIR, \
                 and read only those, the system's folders{also}{network}; `allow_read` or `allow_write` in its \
                 [[mcp.servers]] entry can add a folder]"
            ),
        })
    }

    /// The folders granted for reading beyond the system's, as the refusal
    /// hint lists them: " and A, B", or nothing.
    fn also_read(&self) -> String {
        let system: Vec<&Path> = SYSTEM_READ.iter().chain(SYSTEM_LINKS).map(Path::new).collect();
        let also: Vec<String> = self
            .read
            .iter()
            .filter(|path| !system.contains(&path.as_path()))
            .map(|path| path.display().to_string())
            .collect();
        match also.is_empty() {
            true => String::new(),
            false => format!(" and {}", also.join(", ")),
        }
    }

    /// Prepares the confinement of one process: its temporary directory and
    /// its ruleset, made here in the parent so the child only applies them.
    pub fn prepare(&self) -> Result<Confinement, SandboxError> {
        if self.require && !self.support.filesystem() {
            return Err(SandboxError::Unavailable);
        }
        let tmp = tempfile::Builder::new()
            .prefix("passepartout-tool-")
            .tempdir()
            .map_err(SandboxError::TempDir)?;
        let ruleset = if self.support.filesystem() {
            Option::<std::os::fd::OwnedFd>::from(self.ruleset(tmp.path())?)
        } else {
            None
        };
        let isolation = self.support.isolates().then(Isolation::prepare);
        let group = self.cgroups.as_deref().and_then(|cgroups| {
            let limits = GroupLimits {
                memory_bytes: self.limits.memory_bytes,
                processes: self.limits.processes,
            };
            cgroups
                .make(limits)
                .inspect_err(|error| {
                    tracing::warn!(%error, "cannot make a control group for a tool's process; its limits hold per process")
                })
                .ok()
        });
        let joins = group.as_ref().map(CommandGroup::joins).unwrap_or_default();
        Ok(Confinement {
            child: Some(
                InChild::new(ruleset, self.limits, self.require)
                    .joining(joins)
                    .isolated(isolation)
                    .filtered(self.filter()),
            ),
            _group: group,
            tmp,
            summary: self.summary(),
            refusal_hint: self.refusal_hint(),
        })
    }

    fn ruleset(&self, tmp: &Path) -> Result<RulesetCreated, SandboxError> {
        // A protected file not made yet (the socket's key, written when the
        // socket binds) is protected by where it will be.
        let protected: Vec<PathBuf> = self
            .protected
            .iter()
            .filter_map(|p| {
                p.canonicalize().ok().or_else(|| {
                    let parent = p.parent()?.canonicalize().ok()?;
                    Some(parent.join(p.file_name()?))
                })
            })
            .collect();
        let granted = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths
                .iter()
                .filter_map(|p| p.canonicalize().ok())
                .flat_map(|p| carve(&p, &protected))
                .collect()
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(RULESET_ABI))?
            .scope(Scope::from_all(RULESET_ABI))?;
        if self.network == SandboxNetwork::None {
            ruleset = ruleset.handle_access(AccessNet::from_all(RULESET_ABI))?;
        }
        let write: Vec<PathBuf> = granted(&self.write).into_iter().chain([tmp.to_path_buf()]).collect();
        Ok(ruleset
            .create()?
            .add_rules(path_beneath_rules(
                granted(&self.read),
                AccessFs::from_read(RULESET_ABI),
            ))?
            .add_rules(path_beneath_rules(DEVICES_READ, AccessFs::from_read(RULESET_ABI)))?
            .add_rules(path_beneath_rules(DEVICES_WRITE, AccessFs::from_all(RULESET_ABI)))?
            .add_rules(path_beneath_rules(write, AccessFs::from_all(RULESET_ABI)))?
            .add_rules(path_beneath_rules(
                self.unix_sockets.iter().filter(|socket| socket.exists()),
                AccessFs::ResolveUnix,
            ))?)
    }
}

/// Whether a tool's output tells of a permission the system refused (which
/// the sandbox may have), as the system and the usual runtimes word it; or
/// of a module not found, which is how Node and Python tell of one they
/// were not let read.
pub fn refused(output: &str) -> bool {
    let output = output.to_lowercase();
    [
        "permission denied",
        "operation not permitted",
        "eacces",
        "err_module_not_found",
        "cannot find module",
        "cannot find package",
        "modulenotfounderror",
    ]
    .iter()
    .any(|words| output.contains(words))
}

/// The confinement prepared for one process. Keep it until the process is
/// gone: dropping it removes the process's temporary directory.
pub struct Confinement {
    child: Option<InChild>,
    /// The process's control group, held for its `Drop`: what is left in it
    /// is ended, and it is removed, with the confinement.
    _group: Option<CommandGroup>,
    tmp: TempDir,
    summary: String,
    refusal_hint: Option<String>,
}

impl Confinement {
    /// The ruleset in a few words ([`Policy::summary`]), for the audit.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The sentence for a result that met a permission error
    /// ([`Policy::refusal_hint`]).
    pub fn refusal_hint(&self) -> Option<&str> {
        self.refusal_hint.as_deref()
    }

    /// The process's own temporary directory.
    pub fn tmpdir(&self) -> &Path {
        self.tmp.path()
    }

    /// Sets `command` up to start confined: its `TMPDIR`, and the hook that
    /// applies the limits and the ruleset in the child before `exec`. Only
    /// the first command set up from a confinement gets the hook.
    pub fn apply(&mut self, command: &mut tokio::process::Command) {
        command.env("TMPDIR", self.tmp.path());
        if let Some(mut child) = self.child.take() {
            // SAFETY: the hook runs in the forked child and makes only
            // async-signal-safe system calls (see `child.rs`).
            unsafe {
                command.pre_exec(move || child.enter());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_reads_its_programs_installation_and_has_no_cpu_limit() {
        let base = Policy::new(&SandboxConfig::default(), Support::pretend(7));
        let server = McpServerConfig {
            allow_read: vec![PathBuf::from("/srv/data")],
            network: Some(SandboxNetwork::None),
            ..McpServerConfig::default()
        };
        let programs = [PathBuf::from("/opt/venv/bin/tool"), PathBuf::from("/usr/lib/node/node")];
        let policy = base.for_server(&server, &programs);
        for wanted in ["/srv/data", "/opt/venv", "/usr/lib/node"] {
            assert!(
                policy.read.contains(&PathBuf::from(wanted)),
                "{wanted}: {:?}",
                policy.read
            );
        }
        assert_eq!(policy.network, SandboxNetwork::None);
        assert_eq!(policy.limits().cpu_s, None);
        assert!(base.limits().cpu_s.is_some(), "the shell keeps its CPU limit");
    }

    #[test]
    fn a_refusal_or_a_module_not_found_reads_as_the_sandboxs_possible_doing() {
        for said in [
            "ls: cannot open directory '/root': Permission denied",
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@modelcontextprotocol/sdk'",
            "Error: Cannot find module 'zod'",
            "ModuleNotFoundError: No module named 'mcp'",
        ] {
            assert!(refused(said), "{said}");
        }
        assert!(!refused("Starting default (STDIO) server..."));
    }

    #[test]
    fn the_refusal_hint_names_the_folders_a_server_could_read_and_the_setting() {
        let base = Policy::new(&SandboxConfig::default(), Support::pretend(7));
        let server = McpServerConfig {
            name: "time".into(),
            allow_read: vec![PathBuf::from("/srv/zones")],
            ..McpServerConfig::default()
        };
        let hint = base
            .for_server(&server, &[PathBuf::from("/opt/venv/bin/tool")])
            .refusal_hint()
            .unwrap();
        assert!(hint.contains("\"time\" runs confined"), "{hint}");
        assert!(
            hint.contains("the system's folders and /srv/zones, /opt/venv"),
            "{hint}"
        );
        assert!(
            hint.ends_with("in its [[mcp.servers]] entry can add a folder]"),
            "{hint}"
        );
        assert!(!hint.contains("/usr"), "the system's folders are not listed: {hint}");
        let none = Policy::new(&SandboxConfig::default(), Support::pretend(0));
        assert_eq!(none.for_server(&server, &[]).refusal_hint(), None, "not confined");
    }

    #[test]
    fn a_program_in_a_protected_folder_is_granted_alone() {
        let dir = tempfile::tempdir().unwrap();
        let config_dir = dir.path().canonicalize().unwrap().join("etc");
        std::fs::create_dir(&config_dir).unwrap();
        let script = config_dir.join("server.py");
        std::fs::write(&script, "").unwrap();
        let base = Policy::new(&SandboxConfig::default(), Support::pretend(7)).protecting(&config_dir);
        let policy = base.for_server(&McpServerConfig::default(), std::slice::from_ref(&script));
        assert!(policy.read.contains(&script), "{:?}", policy.read);
        assert!(!policy.read.contains(&config_dir), "{:?}", policy.read);
    }

    #[test]
    fn the_summary_names_the_rules_and_limits() {
        let closed = SandboxConfig {
            network: SandboxNetwork::None,
            processes: 0,
            ..SandboxConfig::default()
        };
        assert_eq!(
            Policy::new(&closed, Support::pretend(7)).summary(),
            "Landlock ABI 7, network closed, cpu 60 s, memory 2048 MiB, file size 256 MiB"
        );
        assert!(
            Policy::new(&closed, Support::pretend(0))
                .summary()
                .starts_with("no Landlock, limits only")
        );
    }
}
