//! Gateways as plug-in components. Each gateway brings one
//! [`GatewayComponent`]: built from its configuration section, it says who
//! may talk through it and who may approve there (in gateway-neutral form, so
//! `Access` and the approvals `Policy` need not know it), builds its running
//! [`Listen`] and [`Deliver`] halves (and its [`Fetch`], when its messages
//! bring media), checks itself for `doctor`, and says whatever else the core
//! must know of it: its section's problems for `check-config`, a secret it
//! cannot read, the settings a reload applies live, what it takes of a file
//! sent through it.
//!
//! [`components`] is the one list of them, and `gathered` asks them on the
//! core's behalf, so the core names no gateway. Adding a gateway is a crate
//! (with its section type and its checks), a module here implementing the
//! trait, its section as a typed field of [`Config`], one line in that
//! list, and its setup step's line in [`setup`].

mod gathered;
#[cfg(feature = "matrix")]
pub mod matrix;
pub mod restarts;
pub mod setup;
pub mod signal;
pub mod socket;
pub mod telegram;
pub mod web;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use passepartout_admin::Admin;
use passepartout_gateway::{ChatId, Deliver, Draft, Fetch, GatewayId, Listen, LiveSecrets, Surface};
use thiserror::Error;

use crate::config::Config;
pub use crate::config::SecretPlaces;
use crate::foundation::checkup::Check;
pub use crate::people::access::Roster;
pub use crate::safety::tools::uploads::Upload;
use crate::store::Store;
pub use gathered::{
    access, channels, live_keys, load, pairing, policy, problems, secret_places, start_problems, surfaces, uploads,
    warnings,
};

/// Every gateway the daemon knows, in the order `doctor` checks them; the
/// disabled ones too, since their lists still say who is who. Each but the
/// local socket is a cargo feature of its own, all on by default: a daemon
/// built without one knows nothing of it, and its code is left out of the
/// binary.
#[cfg_attr(
    not(any(feature = "telegram", feature = "signal", feature = "web", feature = "matrix")),
    allow(unused_mut)
)]
pub fn components(config: &Config) -> Vec<Box<dyn GatewayComponent>> {
    let mut components: Vec<Box<dyn GatewayComponent>> = vec![Box::new(socket::Socket::new(config))];
    #[cfg(feature = "telegram")]
    components.push(Box::new(telegram::Telegram::new(config)));
    #[cfg(feature = "signal")]
    components.push(Box::new(signal::Signal::new(config)));
    #[cfg(feature = "web")]
    components.push(Box::new(web::Web::new(config)));
    #[cfg(feature = "matrix")]
    components.push(Box::new(matrix::Matrix::new(config)));
    components
}

/// One gateway as the daemon sees it before it runs.
#[async_trait]
pub trait GatewayComponent: Send + Sync {
    /// The gateway id its conversations carry.
    fn id(&self) -> GatewayId;

    /// Whether the configuration turns it on. One that is off is not built.
    fn enabled(&self) -> bool;

    /// Who may talk to the assistant through it.
    fn talkers(&self) -> Roster;

    /// Who may decide an approval asked in one of its conversations (users
    /// only: an approver is a person, not a chat).
    fn deciders(&self) -> Roster;

    /// What its people can do with a message (buttons, replies, reactions,
    /// a terminal): the daemon words its own messages by it.
    fn surface(&self) -> Surface;

    /// Starts the gateway with what the daemon offers it.
    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError>;

    /// Its `doctor` line, or none when there is nothing to check.
    async fn check(&self) -> Option<Checked>;

    /// What is wrong with its section, as sentences naming the key
    /// (`telegram.poll_timeout_s must be …`): `check-config`'s problems, and
    /// a reload's. Its crate's section type usually checks itself.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }

    /// What is valid in its section but unwise, as sentences naming the
    /// key: `check-config`'s warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// What would stop it from starting although its section is valid (a
    /// secret it names but cannot read), with variables looked up through
    /// `lookup`; asked only while it is enabled. `check-config`, `run` and
    /// the daemon's start ask it; the client commands do not, since their
    /// shell need not hold the daemon's secrets.
    fn start_problems(&self, _lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        Vec::new()
    }

    /// The settings of its section a reload applies while the daemon runs,
    /// as key paths (`telegram.allowed_users`; a path covers what is below
    /// it); every other change to its section waits for a restart. A reload
    /// swaps the rosters, not the running gateway, so these are the settings
    /// `talkers` and `deciders` read. Asked of the running configuration's
    /// component, so the list may depend on it.
    fn live_keys(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// What it takes of a file the assistant sends (`send_file`): how large,
    /// how to name the platform, whether from a copy.
    fn upload(&self) -> Upload {
        Upload::default()
    }

    /// Its name as people read it in a sentence ("Telegram", "the web
    /// chat"): in the copies a bridge relays, and in what a hand-off says.
    /// Its id, by default.
    fn name(&self) -> String {
        self.id().to_string()
    }

    /// The word a person types after `/handoff` to go on there. Its id, by
    /// default.
    fn handoff_word(&self) -> String {
        self.id().to_string()
    }

    /// Where the secrets it holds are kept (its token's variable and file,
    /// a program's data folder): the sandbox keeps them out of every tool
    /// process's reach and the daemon keeps their values out of what it
    /// shows. Asked of every gateway, on or off. Every gateway says, none
    /// when it holds none: a new one's cannot be left out unnoticed.
    fn secrets(&self) -> SecretPlaces;

    /// A folder of its own beside the store (its keys) that the store's
    /// backups copy, and `restore` puts back; none for most.
    fn kept_beside(&self) -> Option<std::sync::Arc<dyn crate::store::KeptBeside>> {
        None
    }

    /// Whether any of its chats may be joined to a bridge (`[[bridges]]`);
    /// none may, by default.
    fn bridges(&self) -> bool {
        false
    }

    /// Why `chat` cannot be joined to a bridge, if it cannot (only a group
    /// its section lets talk can); asked only of a gateway that
    /// [bridges](GatewayComponent::bridges).
    fn bridge_problem(&self, _chat: &ChatId) -> Option<String> {
        None
    }
}

/// What the daemon offers a gateway it starts.
pub struct BuildContext {
    /// For what a gateway keeps across restarts (Telegram's polling offset).
    pub store: Store,
    /// The local administration path (status, approvals, loops), for a
    /// gateway that serves the machine's owner.
    pub admin: Admin,
    /// The daemon's clock, for what a gateway times (sign-in links' expiry).
    pub clock: crate::foundation::clock::Clock,
    /// Whether replies are shown while they are written (`pipeline.stream`),
    /// where the gateway's own setting does not say.
    pub stream: bool,
    /// The configured secrets, which a reload keeps up to date, for a
    /// gateway that keeps them out of what it shows (the web's answers).
    pub secrets: LiveSecrets,
}

/// A started gateway: its two halves, how to fetch the media of its
/// messages, and where a local client reaches it.
pub struct Built {
    pub listen: Arc<dyn Listen>,
    pub deliver: Arc<dyn Deliver>,
    /// Fetches the files its messages' attachments name; none for a gateway
    /// whose messages bring no media.
    pub fetch: Option<Arc<dyn Fetch>>,
    /// The file a client on this machine connects to, for a gateway that has one.
    pub local_path: Option<PathBuf>,
    /// Shows a reply while it is written; none for a gateway that does not,
    /// or is set not to.
    pub draft: Option<Arc<dyn Draft>>,
}

impl Built {
    /// Its fetcher under its gateway id, for the map by which the core finds
    /// the gateway that fetches a message's media.
    pub fn fetcher(&self) -> Option<(GatewayId, Arc<dyn Fetch>)> {
        self.fetch.clone().map(|fetch| (self.listen.id(), fetch))
    }
}

/// Why a gateway could not start.
#[derive(Debug, Error)]
#[error("cannot start the {gateway} gateway: {cause}")]
pub struct BuildError {
    /// The gateway's name as a person reads it (`Telegram`).
    pub gateway: &'static str,
    /// What went wrong, kept with its type for a caller that inspects it.
    /// Not a `#[source]`: the message says it already, and a report of the
    /// error's chain would say it twice.
    pub cause: Box<dyn std::error::Error + Send + Sync>,
}

impl BuildError {
    pub fn new(gateway: &'static str, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            gateway,
            cause: cause.into(),
        }
    }
}

/// What a gateway's `doctor` check found.
pub struct Checked {
    pub check: Check,
    /// The running daemon's status, when the check reached the daemon
    /// through the gateway (and asked it to probe its providers again).
    pub daemon: Option<serde_json::Value>,
}

impl From<Check> for Checked {
    fn from(check: Check) -> Self {
        Self { check, daemon: None }
    }
}
