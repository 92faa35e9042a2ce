//! Logging the assistant's Matrix account in from the Channels page, as
//! `setup --only matrix` does: the homeserver, the account made for the
//! assistant and its password, used once to log in as a new device and
//! never kept; that device's access token stored in the file
//! `matrix.access_token_file` names, or `matrix.token` beside the
//! configuration (mode 0600), and `[matrix]` turned on and pointed at it,
//! with the owner let in to talk and approve. The daemon makes the new
//! device's keys when it next starts (a session kept for another device
//! is set aside then).

use std::sync::Arc;

use toml_edit::{DocumentMut, value};

use super::super::AdminContext;
use super::super::config_write::{self, Change, ChangeError, Outcome};
use super::beside;
use super::kept::{self, SecretFile};
use crate::config::Secret;
use crate::config::masked::MASK;
use crate::gateways::matrix::{DEFAULT_DEVICE_NAME, is_user_id};

/// What the page's form gave.
pub struct MatrixForm {
    pub homeserver: String,
    pub user: String,
    pub password: String,
    pub owner: Option<String>,
}

/// Logs the account in and writes what the daemon needs to use it.
pub(in crate::daemon::admin) async fn connect_matrix(admin: &Arc<AdminContext>, form: MatrixForm) -> Outcome {
    let homeserver = form.homeserver.trim().trim_end_matches('/').to_owned();
    if !matches!(reqwest::Url::parse(&homeserver), Ok(url) if matches!(url.scheme(), "http" | "https")) {
        return Outcome::refused("the homeserver is an http:// or https:// address (https://matrix.example.org)");
    }
    let user = form.user.trim().to_owned();
    if !is_user_id(&user) {
        return Outcome::refused("the assistant's user id is @name:server, an account made for it");
    }
    let owner = form
        .owner
        .map(|owner| owner.trim().to_owned())
        .filter(|owner| !owner.is_empty());
    if owner.as_deref().is_some_and(|owner| !is_user_id(owner)) {
        return Outcome::refused("your own user id is @name:server");
    }
    if owner.as_deref() == Some(user.as_str()) {
        return Outcome::refused("the assistant needs an account of its own: your user id and its own are the same");
    }
    if form.password.is_empty() {
        return Outcome::refused("the assistant's account needs its password, to log in once");
    }
    let (file, config) = match kept::current(admin).await {
        Ok(current) => current,
        Err(refused) => return refused,
    };
    let device_name = config.matrix.device_name.clone();
    let device_name = match device_name.trim() {
        "" => DEFAULT_DEVICE_NAME.to_owned(),
        name => name.to_owned(),
    };
    let login = crate::gateways::matrix::log_in(&homeserver, &user, &form.password, &device_name).await;
    let (token, device_id) = match login {
        Ok(logged_in) => logged_in,
        Err(error) => {
            return Outcome::refused(format!(
                "The homeserver did not log {user} in: {}; nothing was written",
                (admin.redact)(&error.to_string()).replace(&form.password, MASK)
            ));
        }
    };
    let token_file = config
        .matrix
        .access_token_file
        .clone()
        .unwrap_or_else(|| beside(&file, "matrix.token"));
    let change = MatrixLogin {
        file: SecretFile::new(Secret::new(token), token_file),
        homeserver,
        user: user.clone(),
        device_id: device_id.clone(),
        owner,
    };
    let mut outcome = config_write::apply(admin, None, change).await;
    if outcome.written {
        tracing::info!(%user, %device_id, "the Matrix account was logged in from the dashboard");
        outcome.message = format!("Logged in as {user} on a new device, {device_id}. {}", outcome.message);
    }
    outcome
}

/// The device's token stored in its file, and `[matrix]` turned on for
/// the account and pointed at it.
struct MatrixLogin {
    file: SecretFile,
    homeserver: String,
    user: String,
    device_id: String,
    owner: Option<String>,
}

impl Change for MatrixLogin {
    fn text(&mut self, current: &str) -> Result<String, ChangeError> {
        let mut document: DocumentMut = current.parse().map_err(|_| ChangeError::NotToml)?;
        let matrix = kept::table(&mut document, "matrix")?;
        matrix.insert("enabled", value(true));
        matrix.insert("homeserver", value(&self.homeserver));
        matrix.insert("user", value(&self.user));
        // The token proves who it is now; a password kept would only wait
        // to be used again.
        for stale in ["password_env", "password_file", "access_token_env"] {
            matrix.remove(stale);
        }
        matrix.insert("access_token_file", value(self.file.path.display().to_string()));
        matrix.insert("device_id", value(&self.device_id));
        if let Some(owner) = &self.owner {
            // Approvers default to the allowed users: a list is added to
            // only where the file has one.
            let lists = [
                ("allowed_users", "matrix.allowed_users"),
                ("approvers", "matrix.approvers"),
            ];
            for (key, named) in lists {
                if key == "approvers" && !matrix.contains_key(key) {
                    continue;
                }
                kept::add_to_list(matrix, (key, named), owner.as_str(), |there| {
                    there.as_str() == Some(owner.as_str())
                })?;
            }
        }
        Ok(document.to_string())
    }

    fn prepare(&mut self) -> Result<Option<String>, ChangeError> {
        Ok(self.file.write()?.then(|| {
            format!(
                "Stored the device's access token in {} (mode 0600); the assistant uses it from the daemon's next start",
                self.file.path.display()
            )
        }))
    }

    fn undo(&mut self) {
        self.file.undo();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(file: &std::path::Path, owner: Option<&str>) -> MatrixLogin {
        MatrixLogin {
            file: SecretFile::new(Secret::new("syt_token".to_owned()), file.to_path_buf()),
            homeserver: "https://matrix.example.org".into(),
            user: "@assistant:example.org".into(),
            device_id: "NEWDEVICE".into(),
            owner: owner.map(str::to_owned),
        }
    }

    #[test]
    fn the_token_replaces_the_password_and_the_owner_talks_and_approves() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("matrix.token");
        let mut change = login(&file, Some("@ada:example.org"));
        let text = change
            .text(
                "# mine\n[matrix]\nenabled = false\nhomeserver = \"https://old.example\"\n\
                 password_env = \"MATRIX_PASSWORD\"\nallowed_users = [\"@bob:example.org\"]\n",
            )
            .unwrap();
        assert!(text.starts_with("# mine\n[matrix]\n"), "{text}");
        let config = crate::config::interview::render::loaded(&text);
        let matrix = &config.matrix;
        assert!(matrix.enabled && matrix.uses_token(), "{text}");
        assert_eq!(matrix.password_env, None, "{text}");
        assert_eq!(matrix.homeserver, "https://matrix.example.org");
        assert_eq!(matrix.device_id.as_deref(), Some("NEWDEVICE"));
        assert_eq!(matrix.access_token_file.as_deref(), Some(file.as_path()));
        assert_eq!(matrix.allowed_users, ["@bob:example.org", "@ada:example.org"]);
        assert_eq!(matrix.approver_ids(), ["@bob:example.org", "@ada:example.org"]);
        assert!(matrix.problems().is_empty(), "{:?}", matrix.problems());
        let again = change.text(&text).unwrap();
        assert_eq!(again, text, "the owner is listed once");
        change.prepare().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (std::fs::read_to_string(&file).unwrap().as_str(), mode),
            ("syt_token\n", 0o600)
        );
        change.undo();
        assert!(!file.exists(), "a refused change takes its new file back");
    }

    #[test]
    fn a_list_of_approvers_gains_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let current = "[matrix]\nallowed_users = [\"@bob:example.org\"]\napprovers = [\"@bob:example.org\"]\n";
        let text = login(&dir.path().join("t"), Some("@ada:example.org"))
            .text(current)
            .unwrap();
        let config = crate::config::interview::render::loaded(&text);
        assert_eq!(
            config.matrix.approver_ids(),
            ["@bob:example.org", "@ada:example.org"],
            "{text}"
        );
    }

    #[test]
    fn without_an_owner_nobody_is_let_in_by_the_form() {
        let dir = tempfile::tempdir().unwrap();
        let text = login(&dir.path().join("t"), None).text("").unwrap();
        let config = crate::config::interview::render::loaded(&text);
        assert!(config.matrix.allowed_users.is_empty(), "{text}");
    }
}
