//! The assistant's Matrix session: logged in once, then restored.
//!
//! Its folder (under the daemon's data folder) holds the SDK's SQLite
//! stores — the encryption keys among them — encrypted with a passphrase
//! made on first use and kept beside them in `store.key`, and the session
//! (access token and device id) in `session.json`; both files are mode
//! 0600. A password logs in only when there is no session yet, so the
//! device, and with it every key, stays the same across restarts. An
//! access token (what `setup` stores) is restored as it is.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens};
use thiserror::Error;

/// How the assistant proves who it is.
#[derive(Clone)]
pub enum Login {
    /// Its account's password, used to log in once.
    Password(String),
    /// An access token of its device's.
    Token {
        /// The token.
        token: String,
        /// The device it belongs to.
        device_id: String,
    },
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Login::Password(_) => f.write_str("Password(…)"),
            Login::Token { device_id, .. } => write!(f, "Token {{ device_id: {device_id:?}, … }}"),
        }
    }
}

/// The account and where its session lives.
#[derive(Clone, Debug)]
pub struct Account {
    /// The homeserver's address.
    pub homeserver: String,
    /// The assistant's user id.
    pub user: String,
    /// How it logs in.
    pub login: Login,
    /// The name its device is shown under.
    pub device_name: String,
    /// Its folder: the stores, their passphrase, the session.
    pub folder: PathBuf,
}

/// The session of a first start: logged in with the password, or the
/// configured token's, still to be restored.
enum FirstSession {
    LoggedIn(MatrixSession),
    Token(MatrixSession),
}

/// Why the session could not be had.
#[derive(Debug, Error)]
pub enum SessionError {
    /// The homeserver refused the password or the token.
    #[error("the homeserver did not accept the assistant's login: {0}")]
    Refused(String),
    /// The homeserver could not be reached, or failed.
    #[error("the homeserver could not be reached: {0}")]
    Unreachable(String),
    /// The session's folder or files could not be read or written.
    #[error("{}: {source}", path.display())]
    Files {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Something in the configuration is not what Matrix takes.
    #[error("{0}")]
    Invalid(String),
}

impl Account {
    /// A client logged in as the assistant, its stores opened.
    pub async fn connect(&self) -> Result<Client, SessionError> {
        self.set_aside_another_device()?;
        make_private_folder(&self.folder)?;
        let passphrase = passphrase(&self.folder.join("store.key"))?;
        let client = Client::builder()
            .homeserver_url(&self.homeserver)
            .sqlite_store(self.folder.join("store"), Some(&passphrase))
            .build()
            .await
            .map_err(|error| SessionError::Unreachable(error.to_string()))?;
        let saved = self.folder.join("session.json");
        let session = match read_session(&saved)? {
            Some(session) => self.restore(&client, session).await?,
            None => match self.first_session(&client).await? {
                // A password's login set the session on the client already.
                FirstSession::LoggedIn(session) => session,
                FirstSession::Token(session) => self.restore(&client, session).await?,
            },
        };
        write_private(&saved, &serde_json::to_vec(&session).expect("a session serializes"))?;
        Ok(client)
    }

    /// Sets the folder aside, stores and all, when the session it keeps is
    /// another account's or another device's than the configured login's
    /// (a new login from `setup` or the dashboard): its keys are that
    /// device's, and the new device makes its own. Set aside, not deleted:
    /// the old device's keys may still decrypt old messages.
    fn set_aside_another_device(&self) -> Result<(), SessionError> {
        let Some(saved) = read_session(&self.folder.join("session.json"))? else {
            return Ok(());
        };
        let another_device = match &self.login {
            Login::Token { device_id, .. } => !device_id.is_empty() && device_id != saved.meta.device_id.as_str(),
            Login::Password(_) => false,
        };
        // A homeserver may give the id it logged in with another case.
        if saved.meta.user_id.as_str().eq_ignore_ascii_case(&self.user) && !another_device {
            return Ok(());
        }
        let name = self.folder.file_name().unwrap_or_default().to_string_lossy();
        let safe = |part: &str| part.replace(['/', '\0'], "_");
        let base = format!(
            "{name}.{}-{}",
            safe(saved.meta.user_id.localpart()),
            safe(saved.meta.device_id.as_str())
        );
        // A name of its own, should the same device be set aside again.
        let aside = (1..)
            .map(|n| match n {
                1 => self.folder.with_file_name(&base),
                n => self.folder.with_file_name(format!("{base}-{n}")),
            })
            .find(|place| !place.exists())
            .expect("some name is free");
        std::fs::rename(&self.folder, &aside).map_err(|source| SessionError::Files {
            path: aside.clone(),
            source,
        })?;
        tracing::warn!(
            kept = %saved.meta.device_id,
            aside = %aside.display(),
            "the configuration names another Matrix login than the session kept: that device's stores are set aside, and this one starts afresh"
        );
        Ok(())
    }

    async fn restore(&self, client: &Client, session: MatrixSession) -> Result<MatrixSession, SessionError> {
        client
            .restore_session(session.clone())
            .await
            .map_err(|error| SessionError::Refused(error.to_string()))?;
        Ok(session)
    }

    async fn first_session(&self, client: &Client) -> Result<FirstSession, SessionError> {
        let user_id = OwnedUserId::try_from(self.user.as_str())
            .map_err(|_| SessionError::Invalid(format!("{:?} is not a Matrix user id", self.user)))?;
        match &self.login {
            Login::Token { token, device_id } => Ok(FirstSession::Token(MatrixSession {
                meta: SessionMeta {
                    user_id,
                    device_id: OwnedDeviceId::from(device_id.as_str()),
                },
                tokens: SessionTokens {
                    access_token: token.clone(),
                    refresh_token: None,
                },
            })),
            Login::Password(password) => {
                client
                    .matrix_auth()
                    .login_username(&user_id, password)
                    .initial_device_display_name(&self.device_name)
                    .await
                    .map_err(|error| match error.as_client_api_error() {
                        Some(_) => SessionError::Refused(error.to_string()),
                        None => SessionError::Unreachable(error.to_string()),
                    })?;
                (client.matrix_auth().session())
                    .map(FirstSession::LoggedIn)
                    .ok_or_else(|| SessionError::Refused("the login gave no session".into()))
            }
        }
    }
}

/// A new device's access token and id, from one login with `password`,
/// for `setup` to store instead of the password. Nothing is kept here: the
/// daemon opens the device's stores, and makes its keys, when it first
/// starts with the token.
pub async fn log_in(
    homeserver: &str,
    user: &str,
    password: &str,
    device_name: &str,
) -> Result<(String, String), SessionError> {
    let user_id =
        OwnedUserId::try_from(user).map_err(|_| SessionError::Invalid(format!("{user:?} is not a Matrix user id")))?;
    let client = Client::builder()
        .homeserver_url(homeserver)
        .build()
        .await
        .map_err(|error| SessionError::Unreachable(error.to_string()))?;
    let response = client
        .matrix_auth()
        .login_username(&user_id, password)
        .initial_device_display_name(device_name)
        .await
        .map_err(|error| match error.as_client_api_error() {
            Some(_) => SessionError::Refused(error.to_string()),
            None => SessionError::Unreachable(error.to_string()),
        })?;
    Ok((response.access_token, response.device_id.to_string()))
}

/// `doctor`'s check: whether the homeserver answers and, once the
/// assistant has a session, whether it still holds (the token is asked
/// `whoami`). It opens no store and logs nothing in, so it runs beside the
/// daemon and makes no device.
pub async fn check(account: &Account) -> Result<String, String> {
    let client = Client::builder()
        .homeserver_url(&account.homeserver)
        .build()
        .await
        .map_err(|error| error.to_string())?;
    let versions = client.server_versions().await.map_err(|error| error.to_string())?;
    let newest = versions
        .iter()
        .last()
        .map_or_else(String::new, |version| format!(", Matrix {version:?}"));
    let saved = read_session(&account.folder.join("session.json")).map_err(|error| error.to_string())?;
    let Some(session) = saved else {
        return Ok(format!(
            "{} answers{newest}; the assistant logs in as {} when the daemon starts",
            account.homeserver, account.user
        ));
    };
    let device = session.meta.device_id.to_string();
    client
        .restore_session(session)
        .await
        .map_err(|error| error.to_string())?;
    let whoami = client
        .whoami()
        .await
        .map_err(|error| format!("the saved session is refused: {error}"))?;
    let keys = published_key(&client, &whoami.user_id, &device).await?;
    Ok(format!(
        "{} answers{newest}; logged in as {} on device {device}, its keys in {}; {keys}",
        account.homeserver,
        whoami.user_id,
        account.folder.join("store").display()
    ))
}

/// The encryption state of the assistant's device as others see it: its
/// session key (what a person compares to verify it by hand in Element),
/// or that it has published none yet.
async fn published_key(client: &Client, user: &OwnedUserId, device: &str) -> Result<String, String> {
    use matrix_sdk::ruma::api::client::keys::get_keys;
    let mut request = get_keys::v3::Request::new();
    request
        .device_keys
        .insert(user.clone(), vec![OwnedDeviceId::from(device)]);
    let response = client.send(request).await.map_err(|error| error.to_string())?;
    let key = response
        .device_keys
        .get(user)
        .and_then(|devices| devices.get(<&matrix_sdk::ruma::DeviceId>::from(device)))
        .and_then(|keys| keys.deserialize().ok())
        .and_then(|keys| {
            keys.keys
                .iter()
                .find(|(id, _)| id.algorithm() == matrix_sdk::ruma::DeviceKeyAlgorithm::Ed25519)
                .map(|(_, key)| key.clone())
        });
    Ok(match key {
        Some(key) => format!("end-to-end encryption on, session key {}", grouped(&key)),
        None => "no encryption keys published yet: they are, once the daemon has synced".to_owned(),
    })
}

/// A key in groups of four, as Element shows a session key.
fn grouped(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    chars
        .chunks(4)
        .map(|group| group.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_session(path: &Path) -> Result<Option<MatrixSession>, SessionError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| SessionError::Files {
                path: path.to_path_buf(),
                source: std::io::Error::other(error),
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SessionError::Files {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The stores' passphrase, made (32 random bytes, hex) when there is none.
fn passphrase(path: &Path) -> Result<String, SessionError> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(SessionError::Files {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    let mut bytes = [0u8; 32];
    let files = |source| SessionError::Files {
        path: path.to_path_buf(),
        source,
    };
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").map_err(files)?, &mut bytes).map_err(files)?;
    let made: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    write_private(path, made.as_bytes())?;
    Ok(made)
}

fn make_private_folder(folder: &Path) -> Result<(), SessionError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .map_err(|source| SessionError::Files {
            path: folder.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `path`, mode 0600, through a file beside it renamed
/// into place.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    let files = |source| SessionError::Files {
        path: path.to_path_buf(),
        source,
    };
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(files)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(files)?;
    std::fs::rename(&partial, path).map_err(files)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_passphrase_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.key");
        let made = passphrase(&path).unwrap();
        assert_eq!(made.len(), 64);
        assert_eq!(passphrase(&path).unwrap(), made, "kept across restarts");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_missing_session_is_none_and_a_broken_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        assert!(read_session(&path).unwrap().is_none());
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(read_session(&path), Err(SessionError::Files { .. })));
    }

    fn kept(folder: &Path, user: &str, device: &str) {
        std::fs::create_dir_all(folder).unwrap();
        let session = MatrixSession {
            meta: SessionMeta {
                user_id: OwnedUserId::try_from(user).unwrap(),
                device_id: OwnedDeviceId::from(device),
            },
            tokens: SessionTokens {
                access_token: "syt_old".into(),
                refresh_token: None,
            },
        };
        std::fs::write(folder.join("session.json"), serde_json::to_vec(&session).unwrap()).unwrap();
    }

    fn account(folder: &Path, user: &str, login: Login) -> Account {
        Account {
            homeserver: "http://127.0.0.1:9".into(),
            user: user.into(),
            login,
            device_name: "passepartout".into(),
            folder: folder.to_path_buf(),
        }
    }

    fn token(device_id: &str) -> Login {
        Login::Token {
            token: "syt_new".into(),
            device_id: device_id.into(),
        }
    }

    /// How many folders in `dir` were set aside under `prefix`, a session in each.
    fn aside(dir: &Path, prefix: &str) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
            .filter(|entry| entry.path().join("session.json").exists())
            .count()
    }

    #[test]
    fn a_session_kept_for_another_device_or_account_is_set_aside_and_the_same_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("matrix");
        kept(&folder, "@assistant:example.org", "OLD");
        for same in [
            account(&folder, "@assistant:example.org", token("OLD")),
            account(&folder, "@assistant:example.org", token("")),
            account(&folder, "@assistant:example.org", Login::Password("p".into())),
        ] {
            same.set_aside_another_device().unwrap();
            assert!(folder.join("session.json").exists(), "{:?} keeps it", same.login);
        }
        account(&folder, "@assistant:example.org", token("NEW"))
            .set_aside_another_device()
            .unwrap();
        assert!(!folder.exists());
        assert_eq!(aside(dir.path(), "matrix.assistant-OLD"), 1);

        kept(&folder, "@assistant:example.org", "NEW");
        account(&folder, "@ASSISTANT:example.org", Login::Password("p".into()))
            .set_aside_another_device()
            .unwrap();
        assert!(folder.exists(), "the same account, in another case");
        account(&folder, "@other:example.org", Login::Password("p".into()))
            .set_aside_another_device()
            .unwrap();
        assert_eq!(aside(dir.path(), "matrix.assistant-NEW"), 1, "another account");
        assert!(!folder.exists());

        // The same device set aside again: a name of its own.
        kept(&folder, "@assistant:example.org", "OLD");
        account(&folder, "@assistant:example.org", token("NEW"))
            .set_aside_another_device()
            .unwrap();
        assert_eq!(aside(dir.path(), "matrix.assistant-OLD"), 2);
        assert!(dir.path().join("matrix.assistant-OLD-2/session.json").exists());
    }

    #[test]
    fn a_password_never_shows_in_debug() {
        let login = Login::Password("hunter2".into());
        assert!(!format!("{login:?}").contains("hunter2"));
    }
}
