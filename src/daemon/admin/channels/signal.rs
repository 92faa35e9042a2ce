//! Linking the owner's own Signal account from the Channels page, as
//! `passepartout signal link` links it: the link is shown as a QR code
//! while the phone is to scan it, then `[signal]` is set for the account.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::super::AdminContext;
use super::super::config_write::{self, Change, ChangeError};
use crate::config::{Config, SignalConfig};
use crate::gateways::signal::link::{self as signal_link, LinkRequest, Linked};

/// Where linking a Signal account from the dashboard stands.
#[derive(Default)]
pub struct Linking(Mutex<LinkState>);

#[derive(Clone, Default)]
pub(super) enum LinkState {
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

    pub(super) fn get(&self) -> LinkState {
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
pub(in crate::daemon::admin) fn link_signal(admin: &Arc<AdminContext>) -> Value {
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
    fn only_one_link_at_a_time() {
        let linking = Linking::default();
        assert!(linking.start());
        assert!(!linking.start());
        linking.set(LinkState::Failed("no".into()));
        assert!(linking.start(), "one that ended may be asked again");
    }
}
