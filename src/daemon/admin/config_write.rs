//! Changing the configuration file from the dashboard: the file edited on
//! its Configuration page, a Telegram bot connected or a Signal account
//! linked on its Channels page. Each change goes the same way, one at a
//! time:
//! 1. the file is read (through a link: the file it points at is the one
//!    written); an edit based on another version of it (its [`digest`]
//!    differs) is refused, so no one's change is lost unseen;
//! 2. the change makes the new text, and any file it needs (a token) is
//!    written; when only that file changed, the file itself is checked and
//!    the daemon reloaded, nothing else written;
//! 3. the new text, written beside the file with its mode, is checked with
//!    `check-config`'s own checks (the reload's [`Reload::inspect_file`]);
//!    any problem refuses it, and the file (and what step 2 wrote) is left
//!    as it was;
//! 4. the old file is kept as `FILE.bak`, the new one renamed over it, and
//!    the daemon reloaded: the answer says what applied and what waits for
//!    a restart.
//!
//! Every message is scrubbed of what the file masks and of the configured
//! secrets before it leaves the core.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use passepartout_admin::Reloaded;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{AdminContext, Reload};
use crate::config::masked;

/// What changes to the file share: one at a time.
#[derive(Default)]
pub struct Changes {
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// Why a change cannot make the new file, or what it needs.
#[derive(Debug, thiserror::Error)]
pub(super) enum ChangeError {
    /// The file as edited on the page cannot be laid over the file.
    #[error(transparent)]
    Edited(#[from] crate::config::edited::EditError),
    /// The linked Signal account cannot be set in the file.
    #[error(transparent)]
    Signal(#[from] crate::gateways::signal::link::TextError),
    /// The file is not TOML, so the change cannot be made in it.
    #[error("the configuration file is not TOML: fix it on the Configuration page first")]
    NotToml,
    /// A setting the change makes is of another kind in the file: the
    /// setting, and the kind it must be.
    #[error("{0} in the configuration file is not a {1}")]
    NotA(&'static str, &'static str),
    /// A file the change needs cannot be read or written.
    #[error("cannot {doing} {}: {source}", path.display())]
    File {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A change to the configuration file.
pub(super) trait Change: Send + 'static {
    /// The new file, from the current one; or why not.
    fn text(&mut self, current: &str) -> Result<String, ChangeError>;

    /// Writes what the new file needs (a token's file) before it is
    /// checked: what it stored, for people, when that changed anything
    /// (then it is applied even if the configuration file itself stays as
    /// it was).
    fn prepare(&mut self) -> Result<Option<String>, ChangeError> {
        Ok(None)
    }

    /// Takes back what [`prepare`](Self::prepare) wrote: the file was refused.
    fn undo(&mut self) {}
}

/// What came of a change, as the pages show it.
#[derive(Debug, Default, Serialize)]
pub(super) struct Outcome {
    /// Whether the file was written.
    pub written: bool,
    /// What happened, or why not.
    pub message: String,
    /// What `check-config` found in the new file (then not written).
    pub problems: Vec<String>,
    /// What the reload after the write did.
    pub reloaded: Option<Box<Reloaded>>,
}

impl Outcome {
    pub(super) fn refused(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::default()
        }
    }

    pub(super) fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The digest of a file as read, which an edit hands back to say which
/// version it was made from.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes `change` to the file, unless it is no longer the one `based_on`
/// names; checks, keeps the old file as `.bak`, writes, reloads.
pub(super) async fn apply(admin: &Arc<AdminContext>, based_on: Option<String>, change: impl Change) -> Outcome {
    let _one = admin.changes.one_at_a_time.lock().await;
    let read = admin.clone();
    let written = tokio::task::spawn_blocking(move || write(&*read.reload, based_on.as_deref(), change))
        .await
        .unwrap_or_else(|error| Err(Outcome::refused(format!("the change failed: {error}"))));
    let mut outcome = match written {
        Ok(outcome) => outcome,
        Err(refused) => refused,
    };
    if outcome.written {
        let reloaded = admin.reload.reload().await;
        let read = admin.clone();
        let reloaded = tokio::task::spawn_blocking(move || super::reloaded::scrubbed(&read, reloaded))
            .await
            .unwrap_or_else(|_| super::reloaded::withheld());
        outcome.reloaded = Some(Box::new(reloaded));
    }
    outcome.message = (admin.redact)(&outcome.message);
    outcome.problems = outcome.problems.iter().map(|p| (admin.redact)(p)).collect();
    outcome
}

/// Steps 1 to 4 but the reload; `Err` is the refusal, the file untouched.
fn write(reload: &dyn Reload, based_on: Option<&str>, mut change: impl Change) -> Result<Outcome, Outcome> {
    let Some(file) = reload.file() else {
        return Err(Outcome::refused(
            "the daemon was started without a configuration file, so there is none to change; \
             make one with `passepartout setup` and start the daemon with it",
        ));
    };
    let shown = file.display().to_string();
    // A link is followed: the file it points at is written, the link kept.
    let file = std::fs::canonicalize(&file).unwrap_or(file);
    let current = std::fs::read(&file).map_err(|e| Outcome::refused(format!("cannot read {shown}: {e}")))?;
    if based_on.is_some_and(|based_on| based_on != digest(&current)) {
        return Err(Outcome::refused(format!(
            "{shown} changed since this page read it (another edit, or on disk), so nothing was written: \
             the page now shows the file as it is; make the change again"
        )));
    }
    let current_text = String::from_utf8(current.clone())
        .map_err(|_| Outcome::refused(format!("{shown} is not UTF-8 text: change it in an editor")))?;
    let new = change
        .text(&current_text)
        .map_err(|e| Outcome::refused(e.to_string()))?;
    let mode = std::fs::metadata(&file).map_or(0o600, |meta| meta.permissions().mode() & 0o7777);
    let prepared = change.prepare().map_err(|e| Outcome::refused(e.to_string()))?;
    if new == current_text {
        let Some(stored) = prepared else {
            return Ok(Outcome {
                message: "The file is unchanged; nothing was written.".into(),
                ..Outcome::default()
            });
        };
        let problems = reload.inspect_file(&file).problems;
        if !problems.is_empty() {
            change.undo();
            return Err(refused(problems, &file, &shown, &new));
        }
        return Ok(Outcome {
            written: true,
            message: format!("{stored}; {shown} itself is unchanged."),
            ..Outcome::default()
        });
    }
    let candidate = beside(&file, &format!("check-{}", std::process::id()));
    let checked = write_new(&candidate, new.as_bytes(), mode)
        .map_err(|e| format!("cannot write beside {shown}: {e}"))
        .map(|()| reload.inspect_file(&candidate));
    let problems = match checked {
        Ok(inspection) => inspection.problems,
        Err(error) => vec![error],
    };
    if !problems.is_empty() {
        let _ = std::fs::remove_file(&candidate);
        change.undo();
        return Err(refused(problems, &candidate, &shown, &new));
    }
    let backup = beside(&file, "bak");
    let kept = crate::config::replace_file(&backup, &current, mode)
        .map_err(|e| format!("cannot keep the old file as {}: {e}", backup.display()))
        .and_then(|()| std::fs::rename(&candidate, &file).map_err(|e| format!("cannot write {shown}: {e}")));
    if let Err(error) = kept {
        let _ = std::fs::remove_file(&candidate);
        change.undo();
        return Err(Outcome::refused(error));
    }
    tracing::info!(file = %shown, "configuration file changed from the dashboard; the old one is kept as .bak");
    Ok(Outcome {
        written: true,
        message: format!("Wrote {shown}; the file before is kept as {}.", backup.display()),
        ..Outcome::default()
    })
}

/// The refusal of a changed file (`new`, checked as `checked`) for its
/// `problems`, which name it as `shown` and are scrubbed of what it masks.
fn refused(problems: Vec<String>, checked: &Path, shown: &str, new: &str) -> Outcome {
    let masked = masked::masked(new).ok();
    let named = checked.display().to_string();
    let problems: Vec<String> = problems
        .iter()
        .map(|p| p.replace(&named, shown))
        .map(|p| masked.as_ref().map_or(p.clone(), |m| m.scrub(&p)))
        .collect();
    Outcome {
        message: format!(
            "{} problem(s) in the changed file: nothing was written, and the daemon runs on as before.",
            problems.len()
        ),
        problems,
        ..Outcome::default()
    }
}

/// `FILE.suffix`.
fn beside(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes a file anew (one left by a crash is replaced) with exactly `mode`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::admin::Inspection;

    /// Checks a file as `check-config` would, for these tests: a file
    /// holding "bad" has a problem that quotes it.
    struct Checking(PathBuf);

    #[async_trait::async_trait]
    impl Reload for Checking {
        async fn reload(&self) -> Reloaded {
            Reloaded::default()
        }
        fn inspect(&self) -> Inspection {
            self.inspect_file(&self.0.clone())
        }
        fn inspect_file(&self, file: &Path) -> Inspection {
            let text = std::fs::read_to_string(file).unwrap();
            let problems = text
                .lines()
                .filter(|line| line.contains("bad"))
                .map(|line| format!("{}: {line} is wrong", file.display()))
                .collect();
            Inspection {
                file: Some(self.0.clone()),
                problems,
                ..Inspection::default()
            }
        }
    }

    struct Replace(&'static str);

    impl Change for Replace {
        fn text(&mut self, _current: &str) -> Result<String, ChangeError> {
            Ok(self.0.to_owned())
        }
    }

    /// Leaves the file's text as it is and stores `side` in its own file.
    struct Side {
        file: PathBuf,
        side: &'static str,
    }

    impl Change for Side {
        fn text(&mut self, current: &str) -> Result<String, ChangeError> {
            Ok(current.to_owned())
        }
        fn prepare(&mut self) -> Result<Option<String>, ChangeError> {
            std::fs::write(&self.file, self.side).unwrap();
            Ok(Some(format!("Stored {}", self.file.display())))
        }
        fn undo(&mut self) {
            std::fs::remove_file(&self.file).unwrap();
        }
    }

    #[test]
    fn a_side_file_changed_under_an_unchanged_file_is_stored_and_checked() {
        let (dir, file) = setup();
        let token = dir.path().join("token");
        let change = Side {
            file: token.clone(),
            side: "new",
        };
        let outcome = write(&Checking(file.clone()), None, change).unwrap();
        assert!(outcome.written, "reloaded: {outcome:?}");
        assert!(
            outcome.message.contains("Stored") && outcome.message.contains("itself is unchanged"),
            "{outcome:?}"
        );
        assert_eq!(std::fs::read_to_string(&token).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 1\n");

        std::fs::write(&file, "a = \"bad\"\n").unwrap();
        let change = Side {
            file: token.clone(),
            side: "newer",
        };
        let refused = write(&Checking(file.clone()), None, change).unwrap_err();
        assert_eq!(refused.problems.len(), 1, "{refused:?}");
        assert!(!token.exists(), "taken back");
    }

    #[test]
    fn a_linked_file_is_written_through_its_link() {
        let (dir, file) = setup();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let outcome = write(&Checking(link.clone()), None, Replace("a = 2\n")).unwrap();
        assert!(outcome.written, "{outcome:?}");
        assert!(
            std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
            "still a link"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 2\n");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert!(outcome.message.contains(&link.display().to_string()), "{outcome:?}");
    }

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "a = 1\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        (dir, file)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_with_a_problem_is_refused_and_left_as_it_was() {
        let (dir, file) = setup();
        let refused = write(&Checking(file.clone()), None, Replace("a = \"bad\"\n")).unwrap_err();
        assert!(!refused.written);
        assert_eq!(
            refused.problems,
            vec![format!("{}: a = \"bad\" is wrong", file.display())],
            "named by the file's own path"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 1\n");
        assert_eq!(names(dir.path()), ["config.toml"], "nothing left beside it");
    }

    #[test]
    fn a_good_file_is_written_with_its_mode_and_the_old_one_kept() {
        let (dir, file) = setup();
        let based_on = digest(b"a = 1\n");
        let outcome = write(&Checking(file.clone()), Some(&based_on), Replace("a = 2\n")).unwrap();
        assert!(outcome.written, "{outcome:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 2\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("config.toml.bak")).unwrap(),
            "a = 1\n"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(names(dir.path()), ["config.toml", "config.toml.bak"]);
    }

    #[test]
    fn an_edit_of_another_version_is_refused() {
        let (_dir, file) = setup();
        let stale = digest(b"a = 0\n");
        let refused = write(&Checking(file.clone()), Some(&stale), Replace("a = 2\n")).unwrap_err();
        assert!(
            refused.message.contains("changed since this page read it"),
            "{refused:?}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 1\n");
    }
}
