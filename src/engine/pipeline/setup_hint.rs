//! What a person is told to do when no model answers and starting the
//! server would not be the whole story: run `passepartout setup`, with the
//! configuration file it changes or writes named, so the advice works on a
//! machine that has only the installed binary.

use std::fmt;
use std::path::PathBuf;

use passepartout_gateway::markup::code;

/// Where a model is chosen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SetupHint {
    /// The daemon read this file: `setup --only model` changes its model
    /// and keeps the rest.
    Change(PathBuf),
    /// The daemon runs on the defaults: `setup` writes a file here.
    Write(PathBuf),
    /// Neither is known (no `HOME`): `setup` says where it writes.
    #[default]
    Unknown,
}

impl SetupHint {
    /// The hint for a daemon that read `file`, else for one that runs on
    /// the defaults, `setup` writing `default` then.
    pub fn new(file: Option<PathBuf>, default: Option<PathBuf>) -> Self {
        match (file, default) {
            // Absolute: the person may run setup from another folder.
            (Some(file), _) => Self::Change(std::path::absolute(&file).unwrap_or(file)),
            // A client that read the default file gives none.
            (None, Some(default)) if default.is_file() => Self::Change(default),
            (None, Some(default)) => Self::Write(default),
            (None, None) => Self::Unknown,
        }
    }
}

/// Markdown: the command in backticks, and the path, which may hold
/// characters Markdown would read.
impl fmt::Display for SetupHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Change(file) => write!(
                f,
                "Start that server, or choose another model with {}.",
                code(&format!("passepartout setup --only model --config {}", file.display()))
            ),
            Self::Write(file) => write!(
                f,
                "Start that server, or choose a model with `passepartout setup` (it writes {}).",
                code(&file.display().to_string())
            ),
            Self::Unknown => f.write_str("Start that server, or choose a model with `passepartout setup`."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_read_is_changed_and_without_one_the_default_is_written() {
        let read = SetupHint::new(
            Some("/etc/pp.toml".into()),
            Some("/home/a/.config/passepartout/config.toml".into()),
        );
        assert_eq!(
            read.to_string(),
            "Start that server, or choose another model with `passepartout setup --only model --config /etc/pp.toml`."
        );
        let defaults = SetupHint::new(None, Some("/home/a/.config/passepartout/config.toml".into()));
        assert!(
            defaults
                .to_string()
                .contains("`passepartout setup` (it writes `/home/a/.config/passepartout/config.toml`)")
        );
        assert!(!SetupHint::new(None, None).to_string().contains("config.example.toml"));
    }
}
