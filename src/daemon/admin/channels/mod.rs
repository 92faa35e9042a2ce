//! The dashboard's Channels page, the core's half: each channel's state
//! (the status document's, or off) and its last error (the newest warning
//! its crate logged), and the forms that set a channel up from the
//! browser: a Telegram bot by its token (`telegram.rs`), the owner's own
//! Signal account linked by a QR code (`signal.rs`), and the assistant's
//! Matrix account logged in once (`matrix.rs`). Each changes the
//! configuration file the way every change from the dashboard does
//! (`config_write.rs`).

mod kept;
#[cfg(feature = "matrix")]
mod matrix;
mod signal;
mod telegram;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

#[cfg(feature = "matrix")]
pub(super) use matrix::{MatrixForm, connect_matrix};
use signal::LinkState;
pub use signal::Linking;
pub(super) use signal::link_signal;
pub(super) use telegram::connect_telegram;

use super::AdminContext;
use crate::daemon::recent_logs::Wanted;
use crate::gateways::signal::link as signal_link;

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
        "matrix": {
            "enabled": config.matrix.enabled,
            "homeserver": config.matrix.homeserver,
            "user": config.matrix.user,
            "device_id": config.matrix.device_id,
            "allowed_users": config.matrix.allowed_users,
            "built": cfg!(feature = "matrix"),
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

/// `name` in the folder of `file`.
pub(super) fn beside(file: &Path, name: &str) -> PathBuf {
    file.parent().unwrap_or_else(|| Path::new(".")).join(name)
}
