//! The Matrix gateway as a component: its settings from `[matrix]` (the
//! password or access token read from the environment or a file), the
//! sync token kept in the store's `cursors` tree, durably, the users and
//! rooms that may talk and approve, and `doctor`'s check of the homeserver
//! and the saved session. Its session and encryption keys live in the data
//! folder's `matrix/`, which the sandbox keeps from every tool and which
//! the store's backups copy beside each backup file (`restore` puts it
//! back). Its setup step logs in once
//! and stores the device's access token instead of the password.

pub mod section;
pub mod setup;

pub use passepartout_matrix::client::session::log_in;
pub use passepartout_matrix::config::{DEFAULT_DEVICE_NAME, is_user_id};

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{ChatId, Draft, GatewayId};
use passepartout_matrix::client::{Account, Login, MatrixGateway, MatrixSettings, SyncCursor};
use passepartout_matrix::{GATEWAY_ID, MatrixSection};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, SecretPlaces};
use crate::config::{Config, Secret, SecretError, bridges, unreadable_secret};
use crate::foundation::checkup::{Check, Level};
use crate::store::{KeptBeside, Store};

/// How long `doctor` waits on the homeserver.
const CHECK_LIMIT: Duration = Duration::from_secs(15);
/// How long one sync waits for news.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// `[matrix]`.
pub struct Matrix {
    section: MatrixSection,
    /// Its session and keys: `matrix/` in the data folder.
    folder: PathBuf,
    /// Its rooms joined to chats elsewhere (`[[bridges]]`).
    bridged: BTreeSet<String>,
    /// Whether strangers are offered pairing codes (`[pairing]`).
    pairing: bool,
}

impl Matrix {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.matrix.clone(),
            folder: config.data_dir().join("matrix"),
            bridged: bridges::bridged_on(&config.bridges, GATEWAY_ID)
                .iter()
                .map(|chat| chat.as_str().to_owned())
                .collect(),
            pairing: config.pairing.enabled,
        }
    }

    /// The account, with its password or token read from where `[matrix]` says.
    fn account(&self) -> Result<Account, SecretError> {
        let section = &self.section;
        let login = if section.uses_token() {
            let token = Secret::named(
                section.access_token_env.as_deref(),
                section.access_token_file.as_deref(),
            )
            .unwrap_or_else(|| {
                Err(SecretError::EnvMissing {
                    name: "access_token_env".into(),
                })
            })?;
            Login::Token {
                token: token.expose().to_owned(),
                device_id: section.device_id.clone().unwrap_or_default(),
            }
        } else {
            let password = Secret::named(section.password_env.as_deref(), section.password_file.as_deref())
                .unwrap_or_else(|| {
                    Secret::from_env(passepartout_matrix::config::DEFAULT_PASSWORD_ENV, |n| {
                        std::env::var(n).ok()
                    })
                })?;
            Login::Password(password.expose().to_owned())
        };
        Ok(Account {
            homeserver: section.homeserver.clone(),
            user: section.user.clone(),
            login,
            device_name: section.device_name.clone(),
            folder: self.folder.clone(),
        })
    }
}

/// The Matrix folder (its session and keys) as the store's backups copy it.
struct MatrixKeys(PathBuf);

impl KeptBeside for MatrixKeys {
    fn name(&self) -> &'static str {
        "matrix"
    }

    fn snapshot(&self, into: &std::path::Path) -> std::io::Result<bool> {
        passepartout_matrix::client::backup::snapshot(&self.0, into)
    }
}

#[async_trait]
impl GatewayComponent for Matrix {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("Matrix's gateway id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
    }

    fn name(&self) -> String {
        "Matrix".to_owned()
    }

    fn secrets(&self) -> SecretPlaces {
        let section = &self.section;
        SecretPlaces::default()
            .named(section.password_env.as_deref(), section.password_file.as_deref())
            .named(
                section.access_token_env.as_deref(),
                section.access_token_file.as_deref(),
            )
            .file(self.folder.clone())
    }

    fn kept_beside(&self) -> Option<Arc<dyn KeptBeside>> {
        Some(Arc::new(MatrixKeys(self.folder.clone())))
    }

    fn bridges(&self) -> bool {
        true
    }

    fn bridge_problem(&self, chat: &ChatId) -> Option<String> {
        if !passepartout_matrix::config::is_room_id(chat.as_str()) {
            return Some("not a Matrix room id (!id:server)".to_owned());
        }
        (!self.section.allowed_rooms.iter().any(|room| room == chat.as_str()))
            .then(|| "the room is not in matrix.allowed_rooms, so nothing of it reaches me".to_owned())
    }

    fn talkers(&self) -> Roster {
        Roster::Listed {
            users: self.section.allowed_users.clone(),
            chats: self.section.allowed_rooms.clone(),
        }
    }

    fn deciders(&self) -> Roster {
        Roster::Listed {
            users: self.section.approver_ids().to_vec(),
            chats: Vec::new(),
        }
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_matrix::SURFACE
    }

    fn problems(&self) -> Vec<String> {
        let mut problems = self.section.problems();
        if self.section.enabled && self.section.uses_token() && self.section.device_id.is_none() {
            problems.push("matrix.device_id must name the device the access token belongs to".into());
        }
        problems
    }

    /// The password or token, named by a variable or a file, cannot be read.
    fn start_problems(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        let section = &self.section;
        let (env, file, what) = if section.uses_token() {
            (
                section.access_token_env.as_deref(),
                section.access_token_file.as_deref(),
                "the access token",
            )
        } else {
            (
                section.password_env.as_deref(),
                section.password_file.as_deref(),
                "the password",
            )
        };
        match Secret::named_in(env, file, lookup) {
            Some(Err(error)) => vec![unreadable_secret("matrix", what, &error)],
            _ => Vec::new(),
        }
    }

    /// Who may talk and approve.
    fn live_keys(&self) -> Vec<&'static str> {
        vec!["matrix.allowed_users", "matrix.allowed_rooms", "matrix.approvers"]
    }

    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError> {
        let account = self.account().map_err(|error| BuildError::new("Matrix", error))?;
        let settings = MatrixSettings {
            account,
            allowed_users: self.section.allowed_users.clone(),
            allowed_rooms: self.section.allowed_rooms.clone(),
            group_mode: self.section.group_mode,
            bridged: self.bridged.clone(),
            pairing: self.pairing,
            sync_timeout: SYNC_TIMEOUT,
        };
        let matrix = Arc::new(MatrixGateway::new(
            settings,
            Arc::new(StoreSyncCursor::new(with.store.clone())),
        ));
        Ok(Built {
            listen: matrix.clone(),
            deliver: matrix.clone(),
            draft: self
                .section
                .stream
                .unwrap_or(with.stream)
                .then(|| matrix.clone() as Arc<dyn Draft>),
            fetch: Some(matrix),
            local_path: None,
        })
    }

    /// The homeserver answers, and the saved session holds.
    async fn check(&self) -> Option<Checked> {
        if !self.section.enabled {
            return None;
        }
        let account = match self.account() {
            Ok(account) => account,
            Err(error) => {
                let fix = "set matrix.password_env or password_file (or an access token)";
                return Some(Check::new("matrix", Level::Failed, error.to_string(), Some(fix.into())).into());
            }
        };
        let check = match tokio::time::timeout(CHECK_LIMIT, passepartout_matrix::client::session::check(&account)).await
        {
            Ok(Ok(detail)) => Check::new("matrix", Level::Ok, detail, None),
            Ok(Err(error)) => Check::new(
                "matrix",
                Level::Failed,
                error,
                Some("check matrix.homeserver, and the password or token".into()),
            ),
            Err(_) => Check::new(
                "matrix",
                Level::Failed,
                format!(
                    "{} did not answer within {} s",
                    account.homeserver,
                    CHECK_LIMIT.as_secs()
                ),
                Some("check the network, or matrix.homeserver".into()),
            ),
        };
        Some(check.into())
    }
}

/// The sync token in the store's `cursors` tree.
pub struct StoreSyncCursor {
    store: Store,
}

impl StoreSyncCursor {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

#[async_trait]
impl SyncCursor for StoreSyncCursor {
    fn load(&self) -> Option<String> {
        let bytes = self.store.cursor(GATEWAY_ID).ok()??;
        String::from_utf8(bytes).ok()
    }

    async fn save(&self, token: &str) -> Result<(), String> {
        self.store
            .set_cursor(GATEWAY_ID, token.as_bytes())
            .await
            .map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests_support::open_temp;

    #[tokio::test]
    async fn the_sync_token_survives_in_the_store() {
        let (dir, store) = open_temp();
        let cursor = StoreSyncCursor::new(store.clone());
        assert_eq!(cursor.load(), None);
        cursor.save("s72594_4483_1934").await.unwrap();
        drop((cursor, store));
        let store = crate::store::tests_support::reopen(&dir.path().join("store"));
        assert_eq!(StoreSyncCursor::new(store).load().as_deref(), Some("s72594_4483_1934"));
    }

    #[test]
    fn its_secrets_and_its_keys_folder_are_protected() {
        let mut config = Config::default();
        config.matrix.password_file = Some("/etc/pp/matrix.password".into());
        let places = Matrix::new(&config).secrets();
        let files = places.files();
        assert!(files.iter().any(|f| f.ends_with("matrix.password")), "{files:?}");
        assert!(files.iter().any(|f| f.ends_with("matrix")), "{files:?}");
    }
}
