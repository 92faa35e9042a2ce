//! The Signal gateway as a component: its settings from `[signal]`, the
//! senders and groups that may talk and approve (on a person's own account,
//! their Note to Self and they themselves too), the attachments of its
//! messages fetched from signal-cli, and `doctor`'s check of
//! signal-cli — the daemon at `signal.endpoint`, or in spawn mode a child
//! started for the check and killed after it — and the account.
//!
//! Beside the component, in this folder: `link`, the flow that makes the
//! assistant a linked device of a person's own account; `cli`, the
//! `passepartout signal` command that runs it; and `setup`, the wizard's
//! Signal step and its flags, which links the same way and writes its
//! `section`.

pub mod cli;
pub mod link;
mod section;
pub mod setup;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{ChatId, GatewayId};
use passepartout_signal::normalize::GROUP_PREFIX;
use passepartout_signal::{
    Admitted, Endpoint, GATEWAY_ID, Groups, RpcClient, RpcError, RpcOptions, SignalConfig, SignalGateway,
    SignalSettings, Spawn, Transport,
};
use serde_json::{Value, json};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, Upload};
use crate::config::{Config, SecretPlaces, bridges, expand_home};
use crate::foundation::checkup::{Check, Level};

/// Where signal-cli keeps its accounts' keys unless `signal.spawn_config_dir`
/// says otherwise.
const SIGNAL_CLI_DATA: &str = "~/.local/share/signal-cli";

/// How long the doctor waits on a daemon's answer.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the doctor waits on a child it started: Java takes a while.
const SPAWN_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// `[signal]`.
pub struct Signal {
    section: SignalConfig,
    /// `[[bridges]]`, for the groups of its own that are bridged.
    bridges: Vec<crate::config::BridgeConfig>,
    /// The largest attachment the core may fetch: lines from signal-cli
    /// may be as long as its base64.
    max_attachment_bytes: u64,
}

impl Signal {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.signal.clone(),
            bridges: config.bridges.clone(),
            max_attachment_bytes: config
                .media
                .max_photo_bytes
                .max(config.media.max_document_bytes)
                .max(config.transcription.max_bytes),
        }
    }

    /// The gateway's settings from `[signal]`.
    pub fn settings(&self) -> Result<SignalSettings, String> {
        let signal = &self.section;
        let transport = if signal.spawn {
            Transport::Spawn(Spawn {
                program: PathBuf::from(&signal.spawn_program),
                config_dir: signal.spawn_config_dir.as_ref().map(PathBuf::from),
            })
        } else {
            let endpoint: Endpoint = signal
                .endpoint
                .parse()
                .map_err(|error| format!("signal.endpoint: {error}"))?;
            Transport::Connect(endpoint)
        };
        let mut settings = SignalSettings::with_transport(transport, signal.account.clone());
        settings.account_uuid = signal.account_uuid.clone();
        settings.multi_account = signal.multi_account;
        settings.groups = Groups {
            mode: signal.group_mode,
            bridged: bridges::bridged_on(&self.bridges, GATEWAY_ID)
                .iter()
                .filter_map(|chat| chat.as_str().strip_prefix(GROUP_PREFIX))
                .map(str::to_owned)
                .collect(),
        };
        settings.refusal = signal.refusal.clone();
        settings.max_attachment_bytes = self.max_attachment_bytes;
        settings.note_to_self = signal.note_to_self;
        settings.admitted = Admitted {
            senders: signal.allowed_senders.clone(),
            groups: signal.allowed_groups.clone(),
        };
        Ok(settings)
    }

    /// Reaches the signal-cli that `[signal]` names and asks its version and
    /// whether it has the account: "signal-cli 0.13.x at … has +1555…", or
    /// exactly what is wrong and the command that fixes it.
    pub async fn probe(&self) -> Result<String, String> {
        let settings = self.settings()?;
        let spawned = matches!(settings.transport, Transport::Spawn(_));
        let options = RpcOptions {
            call_timeout: if spawned { SPAWN_CHECK_TIMEOUT } else { CHECK_TIMEOUT },
            ..RpcOptions::default()
        };
        let target = match &settings.transport {
            Transport::Connect(endpoint) => format!("at {endpoint}"),
            Transport::Spawn(_) => format!("started as `{}`", settings.describe_transport()),
        };
        let (client, _notifications) = settings
            .open(options)
            .await
            .map_err(|error| unreachable_message(&settings, &error))?;
        // Closing kills a child started for the check.
        let answers = ask(&client, &settings).await;
        client.close();
        let (version, has_account) = answers.map_err(|(method, error)| {
            if spawned {
                spawned_silent_message(&settings, method, &error)
            } else {
                format!("signal-cli does not answer `{method}`: {error}")
            }
        })?;
        let account = &settings.account;
        if has_account {
            Ok(format!("signal-cli {version} {target} has {account}"))
        } else {
            Err(format!(
                "signal-cli {version} has no account {account}: register it with `signal-cli -a {account} register`, then `verify`"
            ))
        }
    }
}

#[async_trait]
impl GatewayComponent for Signal {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("Signal's gateway id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
    }

    fn name(&self) -> String {
        "Signal".to_owned()
    }

    /// signal-cli's account data: its keys.
    fn secrets(&self) -> SecretPlaces {
        let data = self.section.spawn_config_dir.as_deref().unwrap_or(SIGNAL_CLI_DATA);
        SecretPlaces::default().file(expand_home(Path::new(data)))
    }

    fn bridges(&self) -> bool {
        true
    }

    /// Senders by UUID or number; groups as their conversations name them;
    /// on a person's own account, their Note to Self.
    fn bridge_problem(&self, chat: &ChatId) -> Option<String> {
        let Some(group) = chat.as_str().strip_prefix(GROUP_PREFIX) else {
            return Some(format!(
                "a private chat cannot be bridged, only a group ({GROUP_PREFIX}…)"
            ));
        };
        if self.section.note_to_self {
            // The bot's copies would be sent as the owner, in the owner's own groups.
            return Some(
                "signal.note_to_self is on: the account is a person's own, and copies would come from them".to_owned(),
            );
        }
        (!self.section.allowed_groups.iter().any(|allowed| allowed == group))
            .then(|| "the group is not in signal.allowed_groups, so nothing of it reaches me".to_owned())
    }

    fn talkers(&self) -> Roster {
        let groups = (self.section.allowed_groups.iter()).map(|group| format!("{GROUP_PREFIX}{group}"));
        Roster::Listed {
            users: self.section.allowed_senders.clone(),
            chats: groups.chain(self.section.note_to_self_chat()).collect(),
        }
    }

    /// The approvers; on a person's own account, the person too (by the
    /// account's number, which every note to self carries as its alias).
    fn deciders(&self) -> Roster {
        let owner = self.section.note_to_self_chat().map(|_| self.section.account.clone());
        Roster::Listed {
            users: self.section.approver_ids().iter().cloned().chain(owner).collect(),
            chats: Vec::new(),
        }
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_signal::SURFACE
    }

    fn problems(&self) -> Vec<String> {
        self.section.problems()
    }

    fn warnings(&self) -> Vec<String> {
        self.section.warnings()
    }

    /// Who may talk and approve; but on a person's own account
    /// (`note_to_self`) the gateway applies the allowlists itself, before
    /// the core, as it starts: they wait for a restart there, so that the
    /// gateway and the core never disagree about who may write (which would
    /// let the core answer someone from the person's own number).
    fn live_keys(&self) -> Vec<&'static str> {
        let filtered = ["signal.allowed_senders", "signal.allowed_groups"];
        let lists = filtered.into_iter().filter(|_| !self.section.note_to_self);
        lists.chain(["signal.approvers"]).collect()
    }

    /// What the gateway sends.
    fn upload(&self) -> Upload {
        Upload {
            max_bytes: passepartout_signal::MAX_ATTACHMENT_BYTES,
            platform: "Signal",
            copied: true,
        }
    }

    async fn build(&self, _with: &BuildContext) -> Result<Built, BuildError> {
        let settings = self.settings().map_err(|reason| BuildError::new("Signal", reason))?;
        let signal = SignalGateway::new(settings);
        Ok(Built {
            listen: signal.clone(),
            deliver: signal.clone(),
            // Signal shows typing while a reply is written, not a draft.
            draft: None,
            fetch: Some(signal),
            local_path: None,
        })
    }

    async fn check(&self) -> Option<Checked> {
        if !self.section.enabled {
            return None;
        }
        let check = match self.probe().await {
            Ok(detail) => Check::new("signal", Level::Ok, detail, None),
            Err(problem) => Check::new("signal", Level::Failed, problem, None),
        };
        Some(check.into())
    }
}

/// signal-cli's version, and whether it has the account; or the method that
/// failed and how.
async fn ask(client: &RpcClient, settings: &SignalSettings) -> Result<(String, bool), (&'static str, RpcError)> {
    let version = client
        .call("version", json!({}))
        .await
        .map_err(|error| ("version", error))?;
    let version = version["version"].as_str().unwrap_or("?").to_owned();
    // A single-account signal-cli serves exactly the account it was started with.
    if !settings.multi_account {
        return Ok((version, true));
    }
    let accounts = client
        .call("listAccounts", json!({}))
        .await
        .map_err(|error| ("listAccounts", error))?;
    Ok((version, listed(&accounts, &settings.account)))
}

/// Why signal-cli could not be reached, and what to do about it.
pub fn unreachable_message(settings: &SignalSettings, error: &RpcError) -> String {
    match &settings.transport {
        Transport::Connect(endpoint) => format!(
            "no signal-cli daemon at {endpoint} ({error}); start one: signal-cli daemon --tcp 127.0.0.1:7583 --receive-mode=manual"
        ),
        Transport::Spawn(spawn) => match error {
            RpcError::Connect {
                kind: std::io::ErrorKind::NotFound,
                ..
            } => format!(
                "cannot start signal-cli: there is no program {}; install signal-cli or set signal.spawn_program to its path",
                spawn.program.display()
            ),
            RpcError::Connect { reason, .. } => format!(
                "cannot start `{}` ({reason}); check signal.spawn_program",
                settings.describe_transport()
            ),
            other => format!("cannot start `{}` ({other})", settings.describe_transport()),
        },
    }
}

/// What a started child that does not answer means.
fn spawned_silent_message(settings: &SignalSettings, method: &str, error: &RpcError) -> String {
    let command = settings.describe_transport();
    let account = &settings.account;
    if error.is_connection_lost() && !settings.multi_account {
        // Its usual cause; signal-cli's own words are in the log (stderr, at warn).
        format!(
            "`{command}` ended before answering `{method}` ({error}); is {account} registered? `signal-cli -a {account} register`, then `verify`; signal-cli's stderr is in the log"
        )
    } else {
        format!("`{command}` does not answer `{method}` ({error}); signal-cli's stderr is in the log")
    }
}

/// Whether `listAccounts`' answer names `account`.
fn listed(accounts: &Value, account: &str) -> bool {
    accounts
        .as_array()
        .into_iter()
        .flatten()
        .any(|entry| entry["number"] == account || entry.as_str() == Some(account))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests_support::open_temp;

    #[tokio::test]
    async fn the_built_gateway_fetches_the_attachments_of_its_messages() {
        let (_dir, store) = open_temp();
        let mut config = Config::default();
        config.signal.account = "+15550000001".into();
        let (admin, _requests) = passepartout_admin::Admin::channel(1);
        let built = Signal::new(&config)
            .build(&BuildContext {
                store,
                admin,
                clock: crate::foundation::clock::Clock::start(),
                stream: true,
                secrets: Default::default(),
            })
            .await
            .unwrap();
        let (gateway, _fetch) = built.fetcher().expect("Signal fetches its messages' attachments");
        assert_eq!(gateway.as_str(), GATEWAY_ID);
    }
}
