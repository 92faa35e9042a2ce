//! The dashboard's Channels page, the core's half: each channel's state
//! (the status document's, or off) and its last error (the newest warning
//! its crate logged); a Telegram bot connected by its token (checked with
//! `getMe` as `setup` checks it, stored as `setup` stores it: in the file
//! `telegram.token_file` names, or `telegram.token` beside the
//! configuration, mode 0600); and the owner's own Signal account linked
//! as `passepartout signal link` links it, the link shown as a QR code
//! while the phone is to scan it. Both change the configuration file the
//! way every change from the dashboard does (`config_write.rs`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use toml_edit::{DocumentMut, Item, Table, value};

use super::AdminContext;
use super::config_write::{self, Change, ChangeError, Outcome};
use crate::config::{Config, Secret, SignalConfig};
use crate::daemon::recent_logs::Wanted;
use crate::gateways::signal::link::{self as signal_link, LinkRequest, Linked};

/// Where linking a Signal account from the dashboard stands.
#[derive(Default)]
pub struct Linking(Mutex<LinkState>);

#[derive(Clone, Default)]
enum LinkState {
    /// Not asked, or asked again after it ended.
    #[default]
    Idle,
    /// Asking signal-cli for a link.
    Starting,
    /// The phone is to scan the link.
    Waiting { uri: String },
    /// Linked: the number, and what came of writing the file.
    Linked { number: String, outcome: Value },
    /// It failed, with why.
    Failed(String),
}

impl Linking {
    fn set(&self, state: LinkState) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    fn get(&self) -> LinkState {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Marks a link as starting, unless one is under way.
    fn start(&self) -> bool {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, LinkState::Starting | LinkState::Waiting { .. }) {
            return false;
        }
        *state = LinkState::Starting;
        true
    }
}

/// The channels, Telegram's settings and where a Signal link stands. Reads
/// the configuration file: called off the async threads.
pub(super) fn shown(admin: &AdminContext) -> Value {
    let status = (admin.status)();
    let file = admin.reload.file();
    let config = file
        .as_deref()
        .and_then(|file| crate::config::load(Some(file), None).ok())
        .unwrap_or_default();
    let running: Vec<&Value> = status["gateways"].as_array().into_iter().flatten().collect();
    let mut names: Vec<(String, bool)> = crate::gateways::components(&config)
        .iter()
        .map(|component| (component.id().to_string(), component.enabled()))
        .collect();
    for gateway in &running {
        let name = gateway["name"].as_str().unwrap_or_default();
        if !names.iter().any(|(known, _)| known == name) {
            names.push((name.to_owned(), true));
        }
    }
    let channels: Vec<Value> = names
        .into_iter()
        .map(|(name, in_file)| {
            let live = running.iter().find(|g| g["name"] == name.as_str());
            json!({
                "name": name,
                "state": live.map_or(json!("off"), |g| g["state"].clone()),
                "detail": live.map_or(Value::Null, |g| g["detail"].clone()),
                "restarts": live.map_or(Value::Null, |g| g["restarts"].clone()),
                "in_file": in_file,
                "last_error": last_error(admin, &name),
            })
        })
        .collect();
    let telegram = &config.telegram;
    let link = match admin.signal_link.get() {
        LinkState::Idle => json!({ "state": "idle" }),
        LinkState::Starting => json!({ "state": "starting" }),
        LinkState::Waiting { uri } => json!({
            "state": "waiting",
            "svg": signal_link::qr_svg(&uri).ok(),
            "uri": uri,
        }),
        LinkState::Linked { number, outcome } => json!({ "state": "linked", "number": number, "outcome": outcome }),
        LinkState::Failed(why) => json!({ "state": "failed", "message": (admin.redact)(&why) }),
    };
    json!({
        "file": file.map(|f| f.display().to_string()),
        "channels": channels,
        "telegram": {
            "enabled": telegram.enabled,
            "api_url": telegram.api_url,
            "token_file": telegram.token_file,
            "allowed_users": telegram.allowed_users,
        },
        "signal": {
            "enabled": config.signal.enabled,
            "account": config.signal.account,
            "link": link,
        },
    })
}

/// The newest warning or error a channel's own crate logged, redacted.
fn last_error(admin: &AdminContext, name: &str) -> Value {
    let Some(logs) = &admin.logs else {
        return Value::Null;
    };
    let wanted = Wanted {
        level: Some(tracing::Level::WARN),
        limit: usize::MAX,
        ..Wanted::default()
    };
    let ours = [
        format!("passepartout_{name}"),
        format!("passepartout::gateways::{name}"),
    ];
    let (lines, _) = logs.lines(&wanted);
    lines
        .iter()
        .rev()
        .find(|line| ours.iter().any(|prefix| line.target.starts_with(prefix.as_str())))
        .map_or(
            Value::Null,
            |line| json!({ "at_ms": line.at_ms, "level": line.level, "text": (admin.redact)(&line.text) }),
        )
}

/// Connects the bot whose token is `token`, letting in `owner` if given.
pub(super) async fn connect_telegram(admin: &Arc<AdminContext>, token: String, owner: Option<i64>) -> Outcome {
    let token = token.trim().to_owned();
    if token.is_empty() || token.chars().any(char::is_whitespace) || token.len() > 256 {
        return Outcome::refused("that is not a bot token: paste the token @BotFather gave, as one word");
    }
    if owner.is_some_and(|owner| owner <= 0) {
        return Outcome::refused("a Telegram user id is a positive number");
    }
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
        return Outcome::refused("the configuration could not be read");
    };
    let Some(file) = file else {
        return Outcome::refused(
            "the daemon was started without a configuration file, so there is none to change; \
             make one with `passepartout setup` and start the daemon with it",
        );
    };
    let secret = Secret::new(token.clone());
    let bot = match crate::gateways::telegram::check::bot(&config.telegram.api_url, &secret).await {
        Ok(bot) => bot,
        Err(why) => {
            return Outcome::refused(format!(
                "Telegram did not take the token (getMe): {}; nothing was written",
                (admin.redact)(&why).replace(&token, crate::config::masked::MASK)
            ));
        }
    };
    let token_file = config
        .telegram
        .token_file
        .clone()
        .unwrap_or_else(|| beside(&file, "telegram.token"));
    let change = TelegramToken {
        token: secret,
        file: token_file,
        owner,
        before: None,
    };
    let mut outcome = config_write::apply(admin, None, change).await;
    if outcome.written {
        outcome.message = format!("The bot {bot} answers. {}", outcome.message);
    }
    outcome
}

/// `name` in the folder of `file`.
fn beside(file: &Path, name: &str) -> PathBuf {
    file.parent().unwrap_or_else(|| Path::new(".")).join(name)
}

/// The Telegram token stored in its file, and `[telegram]` turned on and
/// pointed at it.
struct TelegramToken {
    token: Secret,
    file: PathBuf,
    owner: Option<i64>,
    /// The token file as it was, to put back if the change is refused
    /// (none: there was none).
    before: Option<Option<Vec<u8>>>,
}

impl Change for TelegramToken {
    fn text(&mut self, current: &str) -> Result<String, ChangeError> {
        let mut document: DocumentMut = current.parse().map_err(|_| ChangeError::NotToml)?;
        let telegram = document
            .entry("telegram")
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_like_mut()
            .ok_or(ChangeError::NotA("`telegram`", "table"))?;
        telegram.insert("enabled", value(true));
        telegram.remove("token_env");
        telegram.insert("token_file", value(self.file.display().to_string()));
        if let Some(owner) = self.owner {
            let users = telegram
                .entry("allowed_users")
                .or_insert(value(toml_edit::Array::new()))
                .as_array_mut()
                .ok_or(ChangeError::NotA("telegram.allowed_users", "list"))?;
            if !users.iter().any(|user| user.as_integer() == Some(owner)) {
                users.push(owner);
            }
        }
        Ok(document.to_string())
    }

    fn prepare(&mut self) -> Result<Option<String>, ChangeError> {
        let before = match std::fs::read(&self.file) {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ChangeError::File {
                    doing: "read",
                    path: self.file.clone(),
                    source,
                });
            }
        };
        let bytes = format!("{}\n", self.token.expose());
        let unchanged = before.as_deref() == Some(bytes.as_bytes());
        crate::config::replace_file(&self.file, bytes.as_bytes(), 0o600).map_err(|source| ChangeError::File {
            doing: "write",
            path: self.file.clone(),
            source,
        })?;
        self.before = Some(before);
        Ok((!unchanged).then(|| {
            format!(
                "Stored the new token in {} (mode 0600); a bot already running takes it when the daemon restarts",
                self.file.display()
            )
        }))
    }

    fn undo(&mut self) {
        match self.before.take() {
            Some(Some(bytes)) => {
                let _ = crate::config::replace_file(&self.file, &bytes, 0o600);
            }
            Some(None) => {
                let _ = std::fs::remove_file(&self.file);
            }
            None => {}
        }
    }
}

/// `[signal]` set for the account just linked.
struct SignalLinked {
    section: SignalConfig,
    linked: Linked,
}

impl Change for SignalLinked {
    fn text(&mut self, current: &str) -> Result<String, ChangeError> {
        Ok(signal_link::linked_text(current, &self.section, &self.linked)?)
    }
}

/// Starts linking the owner's Signal account, unless a link is under way:
/// what the page is to say now.
pub(super) fn link_signal(admin: &Arc<AdminContext>) -> Value {
    if !admin.signal_link.start() {
        return json!({ "ok": false, "message": "A link is under way already: scan its code, or wait until it ends." });
    }
    let admin = admin.clone();
    // Not on the tracker: a phone that never scans must not hold up a
    // shutdown; a signal-cli started for the link ends with the task.
    tokio::spawn(async move {
        let state = linked(&admin).await;
        admin.signal_link.set(state);
    });
    json!({ "ok": true, "message": "Asking signal-cli for a link…" })
}

/// Links, writes the settings, reloads: where it ended.
async fn linked(admin: &Arc<AdminContext>) -> LinkState {
    let read = admin.clone();
    let config: Option<Config> = tokio::task::spawn_blocking(move || {
        let file = read.reload.file()?;
        crate::config::load(Some(&file), None).ok()
    })
    .await
    .ok()
    .flatten();
    let Some(config) = config else {
        return LinkState::Failed(
            "the configuration file cannot be read (or there is none): see the Configuration page".into(),
        );
    };
    let showing = admin.clone();
    let request = LinkRequest::default();
    let linked = signal_link::link(&config, &request, move |uri| {
        showing.signal_link.set(LinkState::Waiting {
            uri: uri.as_str().to_owned(),
        });
    })
    .await;
    let linked = match linked {
        Ok(linked) => linked,
        Err(error) => return LinkState::Failed(error.to_string()),
    };
    tracing::info!("a Signal account was linked from the dashboard");
    let number = linked.number.clone();
    let change = SignalLinked {
        section: config.signal.clone(),
        linked,
    };
    let outcome = config_write::apply(admin, None, change).await;
    LinkState::Linked {
        number,
        outcome: outcome.to_json(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_in_its_file_and_telegram_points_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telegram.token");
        let mut change = TelegramToken {
            token: Secret::new("123:abc".to_owned()),
            file: file.clone(),
            owner: Some(42),
            before: None,
        };
        let text = change
            .text("# mine\n[telegram]\ntoken_env = \"T\"\nallowed_users = [7]\n")
            .unwrap();
        assert!(text.starts_with("# mine\n[telegram]\n"), "{text}");
        assert!(text.contains("enabled = true") && !text.contains("token_env"), "{text}");
        assert!(text.contains("allowed_users = [7, 42]"), "{text}");
        assert!(text.contains(&format!("token_file = \"{}\"", file.display())), "{text}");
        change.prepare().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (std::fs::read_to_string(&file).unwrap().as_str(), mode),
            ("123:abc\n", 0o600)
        );
        change.undo();
        assert!(!file.exists(), "a refused change takes its new file back");
    }

    #[test]
    fn a_new_token_for_a_bot_already_set_up_is_stored_though_the_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telegram.token");
        std::fs::write(&file, "123:old\n").unwrap();
        let current = format!(
            "[telegram]\nenabled = true\ntoken_file = \"{}\"\nallowed_users = [42]\n",
            file.display()
        );
        let mut change = TelegramToken {
            token: Secret::new("123:new".to_owned()),
            file: file.clone(),
            owner: Some(42),
            before: None,
        };
        assert_eq!(change.text(&current).unwrap(), current);
        let stored = change.prepare().unwrap().expect("the new token is a change");
        assert!(stored.contains("restarts") && !stored.contains("123:new"), "{stored}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "123:new\n");
        change.undo();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "123:old\n", "put back");
        let mut same = TelegramToken {
            token: Secret::new("123:old".to_owned()),
            file: file.clone(),
            owner: None,
            before: None,
        };
        assert_eq!(same.prepare().unwrap(), None, "the same token changes nothing");
    }

    #[test]
    fn only_one_link_at_a_time() {
        let linking = Linking::default();
        assert!(linking.start());
        assert!(!linking.start());
        linking.set(LinkState::Failed("no".into()));
        assert!(linking.start(), "one that ended may be asked again");
    }
}
