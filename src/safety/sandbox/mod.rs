//! The sandbox every process a tool starts runs in: the shell tool's
//! commands and each stdio MCP server.
//!
//! A [`Policy`] (from `[tools.sandbox]`, or a server's own keys, plus what
//! a server's program needs of its installation: `installation.rs`) says
//! what a confined process may read, write and reach; [`Policy::prepare`] builds,
//! in the parent, the Landlock ruleset and the temporary directory for one
//! process, and [`Confinement::apply`] installs the hook that the child runs
//! between `fork` and `exec`: resource limits, a PID namespace of its own
//! (`isolate.rs`: nothing it starts outlives it), `no_new_privs`, the
//! ruleset, and a seccomp filter refusing Unix sockets (`seccomp.rs`).
//! [`Support`] is what the kernel offers (its Landlock ABI), which `doctor`
//! and `status` report.

mod carve;
mod cgroup;
mod check;
mod child;
mod inherited;
mod installation;
mod isolate;
mod limits;
mod policy;
mod probe;
mod seccomp;

use thiserror::Error;

pub use cgroup::Cgroups;
pub use check::check;
pub use limits::Limits;
pub use policy::{Confinement, Policy, SYSTEM_READ, refused};
pub use probe::{PRETEND_ABI_VAR, PRETEND_NO_ISOLATION_VAR, Support};

/// A process could not be confined as its policy asks.
#[derive(Debug, Error)]
pub enum SandboxError {
    /// `require` is on and the kernel has no Landlock.
    #[error(
        "tool processes are refused: tools.sandbox.require is on and this kernel offers no Landlock \
         to confine them"
    )]
    Unavailable,
    /// The process's temporary directory could not be made.
    #[error("cannot create a temporary directory for the tool's process: {0}")]
    TempDir(#[source] std::io::Error),
    /// The kernel refused the ruleset.
    #[error("cannot build the sandbox's ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
}
