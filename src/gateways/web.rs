//! The web dashboard as a gateway component: bound from `[web]` when it is
//! enabled, checking sessions through the core's [`SignIn`] desk and API
//! keys through [`WebKeys`], both over the store. Its people are the
//! signed-in owner and the API keys, and the gateway lets no one else reach
//! the intake (an unknown key is answered 401), so everyone it lets through
//! may talk. Approvals are answered by the owner, and by a key only when it
//! was made with `--approver` (the gateway gives such a key the
//! [`APPROVER`] alias), in its own conversations: a client must not approve
//! the risky actions it asked for itself. Replies are always shown while
//! written, since a streamed API answer is made of the drafts. It fetches the
//! files attached on the Chat page, which the core saves in the workspace's
//! `inbox/`.
//! Its `doctor` line says where it listens, and warns of a public address
//! without TLS.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_gateway::{Draft, Fetch, GatewayId};
use passepartout_web::people::{APPROVER, OWNER};
use passepartout_web::{GATEWAY_ID, Secrets, WebConfig, WebGateway, WebSection};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster};
use crate::checkup::{Check, Level};
use crate::config::{Config, Secret, masked};
use crate::sign_in::SignIn;
use crate::web_keys::WebKeys;

/// `[web]`, and the secrets its answers must never show.
pub struct Web {
    section: WebSection,
    secrets: Secrets,
}

impl Web {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.web.clone(),
            secrets: configured_secrets(config),
        }
    }
}

/// Every secret the configuration names or holds: the model providers'
/// keys, the Telegram token, the transcriber's and the web search's keys
/// (read from their variables and files); the credentials and secret query
/// values of the providers' URLs and proxies and of the MCP servers' URLs;
/// the MCP servers' `env` values, the secrets in their arguments (as the
/// masked configuration hides them) and the values of the variables their
/// `headers_env` names. The admin path redacts the dashboard's documents
/// with them too.
pub(crate) fn configured_secrets(config: &Config) -> Secrets {
    let telegram = &config.telegram;
    let transcription = &config.transcription;
    let search = &config.tools.web_search;
    let named = config
        .llm
        .providers
        .iter()
        .map(|p| (p.api_key_env.as_deref(), p.api_key_file.as_deref()))
        .chain([
            (telegram.token_env.as_deref(), telegram.token_file.as_deref()),
            (
                transcription.api_key_env.as_deref(),
                transcription.api_key_file.as_deref(),
            ),
            (search.api_key_env.as_deref(), search.api_key_file.as_deref()),
        ]);
    let read = named
        .filter_map(|(env, file)| Secret::named(env, file).and_then(Result::ok))
        .map(|secret| secret.expose().to_owned());
    let urls = config
        .llm
        .providers
        .iter()
        .flat_map(|p| std::iter::once(p.base_url.as_str()).chain(p.proxy.as_deref()))
        .chain(config.mcp.servers.iter().filter_map(|s| s.url.as_deref()))
        .flat_map(masked::url_secrets)
        .map(str::to_owned);
    let servers = config.mcp.servers.iter().flat_map(|server| {
        let headers = server
            .headers_env
            .values()
            .filter_map(|variable| std::env::var(variable).ok());
        server
            .env
            .values()
            .cloned()
            .chain(masked::masked_arguments(&server.args).1)
            .chain(headers)
            .collect::<Vec<_>>()
    });
    Secrets::new(read.chain(urls).chain(servers))
}

#[async_trait]
impl GatewayComponent for Web {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
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
            secrets: self.secrets.clone(),
        };
        let sessions = Arc::new(SignIn::new(with.store.clone(), with.clock));
        let keys = Arc::new(WebKeys::new(with.store.clone(), with.clock));
        let web = WebGateway::bind(config, with.admin.clone(), sessions, keys)
            .await
            .map_err(|error| BuildError::new("web", error))?;
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
