//! What every route may use ([`AppState`]): the core's handles, the stores
//! the core keeps for the gateway, the limits and counters the gateway
//! keeps itself. It sits at the bottom of the crate: every handler imports
//! it, and it imports no handler.

use std::sync::{Arc, Mutex, PoisonError};

use passepartout_admin::AdminAs;
use passepartout_gateway::Intake;

use crate::api::in_flight::InFlight;
use crate::chats::Chats;
use crate::downloads::Downloads;
use crate::host::Hosts;
use crate::hub::Hub;
use crate::keys::ApiKeys;
use crate::latency::Latency;
use crate::rate_limit::Guesses;
use crate::redact::LiveSecrets;
use crate::sessions::Sessions;
use crate::streams::Streams;
use crate::threads::Threads;
use crate::uploads::Uploads;

/// What every route may use.
pub struct AppState {
    /// Who waits on which conversation.
    pub hub: Arc<Hub>,
    /// The core's intake, once the gateway listens.
    pub intake: Mutex<Option<Intake>>,
    /// The API keys, kept by the core.
    pub keys: Arc<dyn ApiKeys>,
    /// The owner's chats, kept by the core.
    pub chats: Arc<dyn Chats>,
    /// Where each API conversation stands, kept by the core.
    pub threads: Arc<dyn Threads>,
    /// Kept out of every answer; an answer keeps those it started with.
    pub secrets: LiveSecrets,
    /// How long the API's answers took.
    pub latency: Latency,
    /// The API requests being answered.
    pub in_flight: Arc<InFlight>,
    /// Whether `/metrics` is open without a key (`[web] open_metrics`).
    pub metrics_open: bool,
    /// The core's answers: the status document, the approvals; asked as
    /// the owner, from the web.
    pub admin: AdminAs,
    /// Sign-in links and sessions, kept by the core.
    pub sessions: Arc<dyn Sessions>,
    /// The hosts and origins this dashboard answers.
    pub hosts: Hosts,
    /// Whether the cookie is `Secure` (the public address is https).
    pub secure_cookie: bool,
    /// Failed sign-ins per client.
    pub guesses: Guesses,
    /// The open event streams.
    pub streams: Streams,
    /// Files attached on the chat page, until the core fetches them.
    pub uploads: Uploads,
    /// Files the assistant sent, for the chat page to offer.
    pub downloads: Downloads,
}

impl AppState {
    /// The core's intake, when the gateway listens.
    pub fn intake(&self) -> Option<Intake> {
        self.intake.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}
