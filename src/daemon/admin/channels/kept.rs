//! What the Channels page's forms share: the configuration file and what
//! it holds, read off the async threads, and a secret's file (mode 0600)
//! written before the changed configuration is checked and put back as it
//! was when that change is refused.

use std::path::PathBuf;
use std::sync::Arc;

use toml_edit::{DocumentMut, Item, Table, TableLike, value};

use super::super::AdminContext;
use super::super::config_write::{ChangeError, Outcome};
use crate::config::{Config, Secret};

/// The configuration file the daemon runs on and what it holds; or, as the
/// page shows it, why a form cannot change it.
pub(super) async fn current(admin: &Arc<AdminContext>) -> Result<(PathBuf, Config), Outcome> {
    let read = admin.clone();
    let Ok((file, config)) = tokio::task::spawn_blocking(move || {
        let file = read.reload.file();
        let config = file
            .as_deref()
            .and_then(|file| crate::config::load(Some(file), None).ok())
            .unwrap_or_default();
        (file, config)
    })
    .await
    else {
        return Err(Outcome::refused("the configuration could not be read"));
    };
    let Some(file) = file else {
        return Err(Outcome::refused(
            "the daemon was started without a configuration file, so there is none to change; \
             make one with `passepartout setup` and start the daemon with it",
        ));
    };
    Ok((file, config))
}

/// The table `name` of `document`, made if missing.
pub(super) fn table<'a>(
    document: &'a mut DocumentMut,
    name: &'static str,
) -> Result<&'a mut dyn TableLike, ChangeError> {
    document
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or(ChangeError::NotA(name, "table"))
}

/// Adds `item` to the list `key` of `table` (made if missing), unless
/// `same` finds it there; `named` is how a problem names the list.
pub(super) fn add_to_list(
    table: &mut dyn TableLike,
    (key, named): (&str, &'static str),
    item: impl Into<toml_edit::Value>,
    same: impl Fn(&toml_edit::Value) -> bool,
) -> Result<(), ChangeError> {
    let list = table
        .entry(key)
        .or_insert(value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or(ChangeError::NotA(named, "list"))?;
    if !list.iter().any(same) {
        list.push(item);
    }
    Ok(())
}

/// A secret kept in a file of mode 0600, with the file as it was before.
pub(super) struct SecretFile {
    pub secret: Secret,
    pub path: PathBuf,
    /// The file as it was, to put back if the change is refused (`None`
    /// inside: there was none); `None`: not written yet.
    before: Option<Option<Vec<u8>>>,
}

impl SecretFile {
    pub(super) fn new(secret: Secret, path: PathBuf) -> Self {
        Self {
            secret,
            path,
            before: None,
        }
    }

    /// Writes the secret, as one line: whether that changed the file.
    pub(super) fn write(&mut self) -> Result<bool, ChangeError> {
        let before = match std::fs::read(&self.path) {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ChangeError::File {
                    doing: "read",
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let bytes = format!("{}\n", self.secret.expose());
        let unchanged = before.as_deref() == Some(bytes.as_bytes());
        crate::config::replace_file(&self.path, bytes.as_bytes(), 0o600).map_err(|source| ChangeError::File {
            doing: "write",
            path: self.path.clone(),
            source,
        })?;
        self.before = Some(before);
        Ok(!unchanged)
    }

    /// Puts the file back as it was before [`write`](Self::write).
    pub(super) fn undo(&mut self) {
        match self.before.take() {
            Some(Some(bytes)) => {
                let _ = crate::config::replace_file(&self.path, &bytes, 0o600);
            }
            Some(None) => {
                let _ = std::fs::remove_file(&self.path);
            }
            None => {}
        }
    }
}
