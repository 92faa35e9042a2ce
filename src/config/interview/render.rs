//! The configuration file the wizard writes: a header, then one section per
//! step, each setting with a comment saying what it is. Only what was
//! answered is written; everything else keeps the defaults that
//! `passepartout config example` prints. Each step renders its own section
//! with [`quoted`] and [`path`], which write values TOML reads back as
//! they were.

use std::path::{Path, PathBuf};

/// Where a secret is for the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretRef {
    /// There is none (a local model without a key).
    None,
    /// A file of mode 0600.
    File(PathBuf),
    /// An environment variable the daemon is started with.
    Env(String),
}

/// A TOML basic string. JSON's string escapes are a subset of TOML's, so
/// serde_json writes one that TOML reads back unchanged.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// A path as a TOML basic string.
pub fn path(path: &Path) -> String {
    quoted(&path.to_string_lossy())
}

/// The whole file: the header, then `sections` in order.
pub fn document(sections: &[String]) -> String {
    let mut text = String::from(
        "# passepartout's configuration, written by `passepartout setup`.\n\
         # Every setting not written here keeps its default; `passepartout config\n\
         # example` prints them all, documented. Check the file with\n\
         # `passepartout check-config`.\n\
         # Secrets are never written here: the settings name a file (mode 0600)\n\
         # or an environment variable that holds them.\n",
    );
    for section in sections {
        text.push('\n');
        text.push_str(section);
    }
    text
}

/// `text` loaded as the daemon loads its file, without this process's
/// overrides; a file that does not load fails the test.
#[cfg(test)]
pub fn loaded(text: &str) -> crate::config::Config {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, text).unwrap();
    crate::config::load(Some(&file), Some(Default::default())).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

/// Fails unless every setting in `text` has a comment above it (or is a
/// section's `enabled = true`, which speaks for itself under its section's
/// comment).
#[cfg(test)]
pub fn assert_commented(text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        let setting = !line.starts_with('#') && line.contains(" = ");
        if setting && !line.starts_with("enabled") {
            assert!(
                lines[index - 1].starts_with('#'),
                "no comment above {line:?} in:\n{text}"
            );
        }
    }
}
