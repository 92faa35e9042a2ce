//! The web dashboard as a gateway component: bound from `[web]` when it is
//! enabled, checking sessions through the core's [`SignIn`] desk, API
//! keys through [`WebKeys`], the owner's chats through [`WebChats`] and
//! where API conversations stand through [`WebThreads`], all over the
//! store. Its people are the
//! signed-in owner and the API keys, and the gateway lets no one else reach
//! the intake (an unknown key is answered 401), so everyone it lets through
//! may talk. Approvals are answered by the owner, and by a key only when it
//! was made with `--approver` (the gateway gives such a key the
//! [`APPROVER`] alias), in its own conversations: a client must not approve
//! the risky actions it asked for itself. Replies are always shown while
//! written, since a streamed API answer is made of the drafts. It fetches the
//! files attached on the Chat page, which the core saves in the workspace's
//! `inbox/`. Its answers keep out the configured secrets the daemon hands
//! it (`BuildContext::secrets`), which a reload keeps up to date.
//! Its `doctor` line says where it listens, and warns of a public address
//! without TLS.
//!
//! Beside the component, in this folder, the desks it checks through:
//! `sign_in` (sessions and sign-in links), `keys` (API keys), `chats` (the
//! owner's chats) and `threads` (where API conversations stand); and
//! `setup`, the wizard's dashboard step and its flag.

pub mod chats;
pub mod keys;
pub mod setup;
pub mod sign_in;
pub mod threads;

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_gateway::{Draft, Fetch, GatewayId};
pub use passepartout_web::GATEWAY_ID;
/// The model name the OpenAI-compatible API answers to.
pub use passepartout_web::api::wire::MODEL as API_MODEL;
use passepartout_web::people::{APPROVER, OWNER};
use passepartout_web::{WebConfig, WebGateway, WebSection};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, SecretPlaces};
use crate::config::Config;
use crate::foundation::checkup::{Check, Level};
use chats::WebChats;
use keys::WebKeys;
use sign_in::SignIn;
use threads::WebThreads;

/// `[web]`.
pub struct Web {
    section: WebSection,
}

impl Web {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.web.clone(),
        }
    }
}

#[async_trait]
impl GatewayComponent for Web {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
    }

    /// None of its own: its sessions and keys are kept, hashed, in the
    /// store, in the data directory the sandbox keeps out of reach whole.
    fn secrets(&self) -> SecretPlaces {
        SecretPlaces::default()
    }

    fn name(&self) -> String {
        "the web chat".to_owned()
    }

    fn talkers(&self) -> Roster {
        Roster::Everyone
    }

    fn deciders(&self) -> Roster {
        Roster::Listed {
            users: vec![OWNER.to_owned(), APPROVER.to_owned()],
            chats: Vec::new(),
        }
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_web::SURFACE
    }

    fn problems(&self) -> Vec<String> {
        self.section.problems()
    }

    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError> {
        let config = WebConfig {
            listen: self.section.listen,
            public_url: self.section.public_url.clone(),
            open_metrics: self.section.open_metrics,
            local_users: self.section.local_users.clone(),
            secrets: with.secrets.clone(),
        };
        let sessions = Arc::new(SignIn::new(with.store.clone(), with.clock));
        let keys = Arc::new(WebKeys::new(with.store.clone(), with.clock));
        let chats = Arc::new(WebChats::new(with.store.clone(), with.clock));
        if let Err(error) = chats.adopt_earlier() {
            tracing::warn!(%error, "the owner's earlier web conversation could not be listed as a chat");
        }
        // A port it cannot bind leaves it down, not the daemon unstarted.
        let threads = Arc::new(WebThreads::new(with.store.clone()));
        let web = WebGateway::bind(config, with.admin.clone(), sessions, keys, chats, threads).await;
        Ok(Built {
            listen: web.clone(),
            draft: Some(web.clone() as Arc<dyn Draft>),
            fetch: Some(web.clone() as Arc<dyn Fetch>),
            deliver: web,
            local_path: None,
        })
    }

    async fn check(&self) -> Option<Checked> {
        if !self.section.enabled {
            return Some(Check::new("web", Level::Ok, "disabled in the configuration", None).into());
        }
        let warnings = self.section.warnings();
        let check = match warnings.first() {
            Some(warning) => Check::new(
                "web",
                Level::Degraded,
                warning.clone(),
                Some("serve it through a TLS proxy and set web.public_url to its https:// address".into()),
            ),
            None => Check::new(
                "web",
                Level::Ok,
                format!("dashboard set to listen on {}", self.section.listen),
                None,
            ),
        };
        Some(check.into())
    }
}
