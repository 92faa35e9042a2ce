//! Loading: built-in defaults, then a TOML file, then `PASSEPARTOUT_…`
//! environment variables (`PASSEPARTOUT_DATA_DIR`,
//! `PASSEPARTOUT_PIPELINE__MAX_DEPTH`, …; see `environment.rs`), then the
//! structural check (every key known, every value of its type) and
//! validation, every problem of both reported together.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use config::{File, FileFormat, Source};
use thiserror::Error;

use super::Config;
use super::environment::EnvSource;
use super::file_access::{self, FileProblem};
use super::structure;
use crate::foundation::clock::Clock;

/// Why a configuration could not be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file named cannot be read: missing, not a file, or not readable
    /// by this user (a folder above it it may not enter included).
    #[error("config file {} {problem}", path.display())]
    File { path: PathBuf, problem: FileProblem },
    /// The file is not TOML; nothing after the place named can be read.
    #[error("cannot read configuration: {0}")]
    Parse(String),
    #[error("{} problem(s) in the configuration:\n  - {}", problems.len(), problems.join("\n  - "))]
    Invalid { problems: Vec<String> },
}

/// The file read when no `--config` is given, if it exists:
/// `$XDG_CONFIG_HOME/passepartout/config.toml` or `~/.config/passepartout/config.toml`.
/// One that may be there but cannot be looked at (a folder this user may not
/// enter) is returned too, so that [`load`] says why it cannot be read rather
/// than the defaults being used in silence.
pub fn default_config_file() -> Option<PathBuf> {
    let path = default_config_path()?;
    match file_access::find_file(&path) {
        Err(FileProblem::Missing) => None,
        _ => Some(path),
    }
}

/// Where the default configuration file is, whether it exists or not
/// (where `setup` and `signal link --write` make one):
/// `$XDG_CONFIG_HOME/passepartout/config.toml`, else under `~/.config`; none
/// when neither variable is set.
pub fn default_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("passepartout").join("config.toml"))
}

/// Loads and validates the configuration, all but the gateway sections,
/// which their components check (`gateways::load` adds them).
///
/// `file`: an explicit file, which must exist and be readable. `env`: the environment to read
/// overrides from; `None` reads the process environment (tests pass a map).
pub fn load(file: Option<&Path>, env: Option<HashMap<String, String>>) -> Result<Config, ConfigError> {
    load_checked(file, env, |_| Vec::new(), |_| Vec::new()).map(|(config, _)| config)
}

/// Like [`load`], adding the problems `gateways` finds in the gateway
/// sections (taken as the configuration's own: one about a key the file
/// wrote wrongly is left out, as the sections' own are) and those `more`
/// finds — checks that need what the configuration cannot see, such as the
/// tools the daemon registers — to the rest, so that every problem is
/// reported at once. Returns the configuration with its warnings: a
/// `PASSEPARTOUT_…` variable that sets nothing is named and ignored, not a
/// failure.
pub fn load_checked(
    file: Option<&Path>,
    env: Option<HashMap<String, String>>,
    gateways: impl FnOnce(&Config) -> Vec<String>,
    more: impl FnOnce(&Config) -> Vec<String>,
) -> Result<(Config, Vec<String>), ConfigError> {
    let mut builder = config::Config::builder();
    if let Some(path) = file {
        // Opened here first, so that a missing file and one this user may
        // not read are told apart (the parser would only say it failed).
        file_access::open_file(path).map_err(|problem| ConfigError::File {
            path: path.to_path_buf(),
            problem,
        })?;
        builder = builder.add_source(File::from(path).format(FileFormat::Toml));
    }
    let tree = builder
        .add_source(EnvSource::new(env))
        .build()
        .and_then(|merged| merged.collect())
        .map_err(unreadable)?;
    let reading = structure::read(tree);
    let mut problems = reading.problems.clone();
    if let Some(config) = &reading.config {
        // Loop schedules are checked against the wall time now.
        let mut semantic = super::validate(config, Clock::start().now_ms());
        semantic.extend(gateways(config));
        problems.extend(semantic.into_iter().filter(|problem| !reading.hides(problem)));
        problems.extend(more(config));
    }
    match reading.config {
        Some(config) if problems.is_empty() => Ok((config, reading.warnings)),
        _ => Err(ConfigError::Invalid { problems }),
    }
}

/// Says where a file stops being TOML: `line 3, column 12: …`, from the
/// parser's report, which puts the place first and the reason after the
/// quoted line.
fn unreadable(error: config::ConfigError) -> ConfigError {
    let config::ConfigError::FileParse { cause, .. } = error else {
        return ConfigError::Parse(error.to_string());
    };
    let report = cause.to_string();
    let place = report
        .lines()
        .next()
        .and_then(|first| first.split_once(" at "))
        .map(|(_, place)| place.trim().to_string());
    let reason: Vec<&str> = report
        .lines()
        .skip(1)
        .filter(|line| !line.trim_start().starts_with('|') && !line.contains(" | "))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    match place {
        Some(place) => ConfigError::Parse(format!("{place}: {}", reason.join("; "))),
        // The report quotes the offending line, which may hold a secret:
        // shown on the dashboard too, it says only that the file is not TOML.
        None => ConfigError::Parse("the file is not valid TOML".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn no_file_gives_the_defaults() {
        assert_eq!(load(None, env(&[])).unwrap(), Config::default());
    }

    #[test]
    fn the_example_file_equals_the_defaults() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        assert_eq!(load(Some(&example), env(&[])).unwrap(), Config::default());
    }

    #[test]
    fn environment_overrides_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "data_dir = \"/from/file\"\n[pipeline]\nmax_depth = 3\n").unwrap();
        let config = load(
            Some(&path),
            env(&[
                ("PASSEPARTOUT_PIPELINE__MAX_DEPTH", "7"),
                ("PASSEPARTOUT_SOCKET__ENABLED", "false"),
            ]),
        )
        .unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/from/file"));
        assert_eq!(config.pipeline.max_depth, 7);
        assert!(!config.socket.enabled);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[pipeline]\nmax_dept = 3\n").unwrap();
        let error = load(Some(&path), env(&[])).unwrap_err();
        assert!(matches!(error, ConfigError::Invalid { .. }), "{error}");
        assert!(error.to_string().contains("max_dept"), "{error}");
        assert!(
            error
                .to_string()
                .contains("pipeline.max_dept is not a setting; did you mean pipeline.max_depth?"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_explicit_file_is_an_error() {
        let error = load(Some(Path::new("/nonexistent/passepartout.toml")), env(&[])).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::File {
                    problem: FileProblem::Missing,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "config file /nonexistent/passepartout.toml does not exist"
        );
    }

    #[test]
    fn a_folder_given_as_the_file_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = load(Some(dir.path()), env(&[])).unwrap_err();
        assert!(error.to_string().ends_with("is not a file"), "{error}");
    }
}
