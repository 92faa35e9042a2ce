//! Why `passepartout setup` stopped, and the exit code each reason gives:
//! 2 for what the person can fix on the command line, 1 for a check or a
//! write that failed.

use std::path::PathBuf;

use thiserror::Error;

/// Why the wizard stopped.
#[derive(Debug, Error)]
pub enum SetupError {
    #[error(
        "standard input is not a terminal: run `passepartout setup` in one, or pass --non-interactive with the answers as flags"
    )]
    NoTerminal,
    #[error("{what}: missing; give it with {flag}")]
    Missing { flag: &'static str, what: String },
    #[error("environment variable {name} (named by {flag}) is not set")]
    EnvMissing { name: String, flag: &'static str },
    #[error("standard input has no line left for {flag}")]
    StdinEmpty { flag: &'static str },
    #[error("{} exists; pass --force to replace it (the old one is kept as {}.bak)", path.display(), path.display())]
    Exists { path: PathBuf },
    #[error("no configuration file path: set --config, XDG_CONFIG_HOME or HOME")]
    NoPath,
    #[error("{check}")]
    CheckFailed { check: String, hint: &'static str },
    /// No owner could be found: `how` says how to name one.
    #[error("no owner: {reason}; give {how}")]
    NoOwner { reason: String, how: &'static str },
    #[error("the terminal: {0}")]
    Terminal(std::io::Error),
    #[error("the input ended before every question was answered")]
    InputClosed,
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the file written does not load: {0}")]
    Unloadable(String),
    #[error(transparent)]
    Only(#[from] super::only::OnlyError),
    /// The file with the part replaced would not load; it was left as it was.
    #[error("with the new part, {} would not load, so it was left as it was: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
}

impl SetupError {
    /// The process's exit code for this reason.
    pub fn exit_code(&self) -> u8 {
        match self {
            SetupError::NoTerminal
            | SetupError::Missing { .. }
            | SetupError::EnvMissing { .. }
            | SetupError::StdinEmpty { .. }
            | SetupError::Exists { .. }
            | SetupError::NoPath
            | SetupError::Only(super::only::OnlyError::Missing { .. }) => 2,
            _ => 1,
        }
    }

    /// What to do about it, when there is more to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            SetupError::CheckFailed { hint, .. } => Some(hint),
            _ => None,
        }
    }
}
