//! The `[signal]` settings of a linked account, printed for the person to
//! add, or written into the configuration file in place.
//!
//! Writing goes through `toml_edit`, which keeps everything else of the file
//! as it was: comments, order, other sections, the keys of `[signal]` not
//! set here. The new text is written beside the file and renamed over it,
//! so a crash leaves the old file or the new one, never half of one; it
//! keeps the old file's permissions, and a file made anew is private to its
//! owner (0600), as a configuration may hold secrets.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use passepartout_signal::{Linked, SignalConfig};
use thiserror::Error;
use toml_edit::{DocumentMut, Item, Table};

/// The mode of a configuration file made anew.
const NEW_FILE_MODE: u32 = 0o600;

/// Why the configuration file could not be updated.
#[derive(Debug, Error)]
pub enum EditError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not TOML: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("`signal` in {} is not a table", path.display())]
    NotATable { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// One setting of `[signal]` for a linked account.
#[derive(Debug, Clone, PartialEq)]
enum Setting {
    Flag(&'static str, bool),
    Text(&'static str, String),
}

/// What `[signal]` needs for the account `linked`, reached as `section`
/// reaches signal-cli now: on, the number, Note to Self, and how signal-cli
/// is reached (a child of the daemon's own, started with `-a NUMBER`; or
/// the multi-account daemon that linked it).
fn settings(section: &SignalConfig, linked: &Linked) -> Vec<Setting> {
    let mut settings = vec![
        Setting::Flag("enabled", true),
        Setting::Text("account", linked.number.clone()),
        Setting::Flag("note_to_self", true),
    ];
    if section.spawn {
        settings.push(Setting::Flag("spawn", true));
    } else {
        settings.push(Setting::Text("endpoint", section.endpoint.clone()));
        settings.push(Setting::Flag("multi_account", true));
    }
    settings
}

/// The lines to add to `[signal]`, as TOML.
pub fn section_lines(section: &SignalConfig, linked: &Linked) -> String {
    let mut table = Table::new();
    set_all(&mut table, &settings(section, linked));
    let mut document = DocumentMut::new();
    document.insert("signal", Item::Table(table));
    document.to_string()
}

/// Sets each of `settings` in `table`: a key already there keeps its place
/// and its comments, only its value changes.
fn set_all(table: &mut dyn toml_edit::TableLike, settings: &[Setting]) {
    for setting in settings {
        let (key, mut new) = match setting {
            Setting::Flag(key, flag) => (*key, toml_edit::Value::from(*flag)),
            Setting::Text(key, text) => (*key, toml_edit::Value::from(text.as_str())),
        };
        match table.get_mut(key).and_then(Item::as_value_mut) {
            Some(old) => {
                *new.decor_mut() = old.decor().clone();
                *old = new;
            }
            None => {
                table.insert(key, Item::Value(new));
            }
        }
    }
}

/// Sets `[signal]` in the file at `path` (made if missing) for `linked`,
/// keeping the rest. A UUID of another account is removed.
pub fn write_linked(path: &Path, section: &SignalConfig, linked: &Linked) -> Result<(), EditError> {
    let (text, mode) = match std::fs::read_to_string(path) {
        Ok(text) => {
            let mode = std::fs::metadata(path)
                .map(|meta| meta.permissions().mode() & 0o7777)
                .unwrap_or(NEW_FILE_MODE);
            (text, mode)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (String::new(), NEW_FILE_MODE),
        Err(source) => {
            return Err(EditError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let text = linked_text(&text, section, linked).map_err(|edit| edit.at(path))?;
    replace(path, text.as_bytes(), mode)
}

/// `text` (a configuration file) with `[signal]` set for `linked`, the
/// rest kept. A UUID of another account is removed.
pub fn linked_text(text: &str, section: &SignalConfig, linked: &Linked) -> Result<String, TextError> {
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error: toml_edit::TomlError| TextError::Parse(error.to_string()))?;
    let signal = document
        .entry("signal")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or(TextError::NotATable)?;
    let other_account = signal
        .get("account")
        .and_then(Item::as_str)
        .is_some_and(|account| account != linked.number);
    if other_account {
        signal.remove("account_uuid");
    }
    set_all(signal, &settings(section, linked));
    Ok(document.to_string())
}

/// Why a configuration's text could not take the settings.
#[derive(Debug, Error)]
pub enum TextError {
    #[error("the file is not TOML: {0}")]
    Parse(String),
    #[error("`signal` is not a table")]
    NotATable,
}

impl TextError {
    /// The same, about the file at `path`.
    fn at(self, path: &Path) -> EditError {
        let path = path.to_path_buf();
        match self {
            TextError::Parse(reason) => EditError::Parse { path, reason },
            TextError::NotATable => EditError::NotATable { path },
        }
    }
}

/// Writes `bytes` beside `path` and renames the copy over it, making the
/// folder if it is missing.
fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), EditError> {
    let failed = |source| EditError::Write {
        path: path.to_path_buf(),
        source,
    };
    let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty());
    if let Some(folder) = folder {
        std::fs::create_dir_all(folder).map_err(failed)?;
    }
    crate::config::replace_file(path, bytes, mode).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMBER: &str = "+15551234567";

    fn linked() -> Linked {
        Linked { number: NUMBER.into() }
    }

    #[test]
    fn the_lines_name_the_account_note_to_self_and_how_signal_cli_is_reached() {
        let spawned = SignalConfig {
            spawn: true,
            ..SignalConfig::default()
        };
        let lines = section_lines(&spawned, &linked());
        assert_eq!(
            lines,
            "[signal]\nenabled = true\naccount = \"+15551234567\"\nnote_to_self = true\nspawn = true\n"
        );
        let daemon = section_lines(&SignalConfig::default(), &linked());
        assert!(daemon.contains("multi_account = true"), "{daemon}");
        assert!(daemon.contains("endpoint = \"tcp:127.0.0.1:7583\""), "{daemon}");
    }

    #[test]
    fn writing_keeps_the_rest_of_the_file_and_drops_another_accounts_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let before = "# my assistant\n[pipeline]\nmax_depth = 3 # deep enough\n\n[signal]\n# the old bot\naccount = \"+15550000009\" # its number\naccount_uuid = \"old\"\nallowed_senders = [\"friend\"]\n";
        std::fs::write(&path, before).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_linked(&path, &SignalConfig::default(), &linked()).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        for kept in [
            "# my assistant",
            "max_depth = 3 # deep enough",
            "# the old bot",
            "allowed_senders = [\"friend\"]",
        ] {
            assert!(after.contains(kept), "{kept:?} lost:\n{after}");
        }
        assert!(
            after.contains("# the old bot\naccount = \"+15551234567\" # its number"),
            "{after}"
        );
        assert!(after.contains("note_to_self = true"), "{after}");
        assert!(!after.contains("account_uuid"), "{after}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "the file's mode is kept");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no copy left behind");
    }

    #[test]
    fn a_missing_file_is_made_private_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new").join("config.toml");
        write_linked(&path, &SignalConfig::default(), &linked()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let broken = dir.path().join("broken.toml");
        std::fs::write(&broken, "[signal\n").unwrap();
        assert!(matches!(
            write_linked(&broken, &SignalConfig::default(), &linked()),
            Err(EditError::Parse { .. })
        ));
        let scalar = dir.path().join("scalar.toml");
        std::fs::write(&scalar, "signal = 3\n").unwrap();
        assert!(matches!(
            write_linked(&scalar, &SignalConfig::default(), &linked()),
            Err(EditError::NotATable { .. })
        ));
    }
}
