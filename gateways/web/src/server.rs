//! The web gateway as the daemon runs it: bound when the daemon starts (so
//! a taken port is a start error, and the address is known — port 0 takes
//! a free one), serving while it listens, closing every event stream when
//! it stops. Its health names the address people open, which is how
//! `passepartout web` and the tests find it. The core's replies and drafts
//! in web conversations go to the [`Hub`], to whoever waits on them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::serve::ListenerExt;
use passepartout_admin::Admin;
use passepartout_gateway::{
    ConversationKey, Deliver, Delivered, Draft, DraftPace, DraftText, Fetch, Fetched, FileRef, GatewayError, GatewayId,
    Health, HealthState, Intake, Listen, MessageId, Outbound, OutboundBody, OutboundFile, Surface,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::downloads::{self, Download, Downloads};
use crate::error::WebError;
use crate::events::Streams;
use crate::host::Hosts;
use crate::hub::Hub;
use crate::keys::ApiKeys;
use crate::metrics::Latency;
use crate::rate_limit::Guesses;
use crate::redact::LiveSecrets;
use crate::router::{AppState, router};
use crate::sessions::Sessions;
use crate::uploads::Uploads;

/// The gateway id.
pub const GATEWAY_ID: &str = "web";

/// A page in a browser: plain text, no buttons to answer with yet. An API
/// key answers approvals only when made to, so one that may not is told
/// who may.
pub const SURFACE: Surface = Surface {
    who_approves: Some(
        "Approvals here are answered on the dashboard's Approvals page, or by an API key made with \
         `passepartout web keys create NAME --approver` (in its own conversations).",
    ),
    ..Surface::TEXT
};

/// Where the dashboard listens and the address people open.
#[derive(Clone, Debug)]
pub struct WebConfig {
    pub listen: SocketAddr,
    /// `https://assistant.example.org`, when the dashboard is reached
    /// through another address than `listen`.
    pub public_url: Option<String>,
    /// Whether `/metrics` is served without a key.
    pub open_metrics: bool,
    /// The daemon's configured secrets, kept out of every answer, as a
    /// reload brings them up to date.
    pub secrets: LiveSecrets,
}

/// The running dashboard.
pub struct WebGateway {
    id: GatewayId,
    listener: Mutex<Option<TcpListener>>,
    state: Arc<AppState>,
    /// What people open: the public address, or the bound one.
    base_url: String,
    /// Ends every event stream when the gateway stops.
    stopped: CancellationToken,
}

impl WebGateway {
    /// Binds `config.listen`; the dashboard answers once it listens.
    pub async fn bind(
        config: WebConfig,
        admin: Admin,
        sessions: Arc<dyn Sessions>,
        keys: Arc<dyn ApiKeys>,
    ) -> Result<Arc<Self>, WebError> {
        let bind_error = |source| WebError::Bind {
            addr: config.listen,
            source,
        };
        let listener = TcpListener::bind(config.listen).await.map_err(bind_error)?;
        let bound = listener.local_addr().map_err(bind_error)?;
        let public_url = config.public_url.as_deref().map(|url| url.trim_end_matches('/'));
        let base_url = public_url.map_or_else(|| format!("http://{bound}"), str::to_owned);
        let stopped = CancellationToken::new();
        let state = Arc::new(AppState {
            hub: Arc::new(Hub::default()),
            intake: Mutex::new(None),
            keys,
            latency: Latency::default(),
            in_flight: Default::default(),
            secrets: config.secrets.clone(),
            metrics_open: config.open_metrics,
            admin,
            sessions,
            hosts: Hosts::new(bound, public_url),
            secure_cookie: public_url.is_some_and(|url| url.starts_with("https://")),
            guesses: Guesses::default(),
            streams: Streams::new(stopped.clone()),
            uploads: Uploads::default(),
            downloads: Downloads::default(),
        });
        tracing::info!(listen = %bound, url = %base_url, "web dashboard bound");
        Ok(Arc::new(Self {
            id: GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid"),
            listener: Mutex::new(Some(listener)),
            state,
            base_url,
            stopped,
        }))
    }

    /// The address people open (`http://127.0.0.1:8787`), without a
    /// trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

#[async_trait]
impl Listen for WebGateway {
    fn id(&self) -> GatewayId {
        self.id.clone()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(listener) = listener else {
            return Err(GatewayError::Closed);
        };
        *self
            .state
            .intake
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(intake);
        let app = router(self.state.clone()).into_make_service_with_connect_info::<SocketAddr>();
        let stopped = self.stopped.clone();
        let intake_gone = self.state.clone();
        // Each piece of a streamed answer is a small write: without
        // TCP_NODELAY it waits for the client's delayed ACK (~40 ms).
        let listener = listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY on a web connection");
            }
        });
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                shutdown.cancelled().await;
                // Messages are refused from now on; answers still being
                // written reach the requests waiting for them.
                intake_gone
                    .intake
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .take();
                // The event streams never end on their own.
                stopped.cancel();
            })
            .await;
        served.map_err(|error| GatewayError::Transient {
            reason: format!("the dashboard stopped serving: {error}"),
        })
    }

    /// Up, naming the address people open.
    fn health(&self) -> Health {
        Health::with(HealthState::Up, self.base_url.clone())
    }

    async fn close(&self) {
        self.stopped.cancel();
        self.state.hub.close();
    }
}

/// A reply goes to whoever waits on its conversation. Nobody waiting is
/// no failure: the turn is in the conversation's history already, where a
/// client that went away finds it, so the reply counts as delivered once.
#[async_trait]
impl Deliver for WebGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        if message.conversation.gateway != self.id {
            return Err(GatewayError::Rejected {
                reason: format!("{} is not a web conversation", message.conversation),
            });
        }
        if let OutboundBody::File(file) = &message.body {
            self.hold(&message.id, file).await?;
        }
        let told = self.state.hub.said(message).await;
        tracing::debug!(conversation = %message.conversation, outbound_id = %message.id, told, "web reply handed out");
        let id = MessageId::new(message.id.as_str()).map_err(|error| GatewayError::Rejected {
            reason: format!("bad outbound id: {error}"),
        })?;
        Ok(Delivered { message_ids: vec![id] })
    }
}

impl WebGateway {
    /// Reads a file the assistant sends and holds it for the chat page:
    /// the core removes its copy once this delivery returns.
    async fn hold(&self, outbound_id: &str, file: &OutboundFile) -> Result<(), GatewayError> {
        if file.size > downloads::MAX_BYTES {
            return Err(GatewayError::TooLarge {
                size: Some(file.size),
                limit: downloads::MAX_BYTES,
            });
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|error| GatewayError::Rejected {
                reason: format!("the file to send cannot be read: {error}"),
            })?;
        self.state.downloads.hold(Download {
            key: downloads::key(outbound_id),
            name: file.name.clone(),
            caption: file.caption.clone(),
            bytes,
        });
        Ok(())
    }
}

/// A draft goes to whoever waits, as it grows; it occupies no message.
#[async_trait]
impl Draft for WebGateway {
    fn pace(&self) -> DraftPace {
        DraftPace::AT_ONCE
    }

    async fn show_draft(
        &self,
        conversation: &ConversationKey,
        _shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        self.state.hub.drafted(&conversation.chat, draft).await;
        Ok(vec![MessageId::new(DRAFT_ID).expect("a valid message id")])
    }
}

/// What a web draft is called: the conversation's one draft.
const DRAFT_ID: &str = "draft";

/// The files attached on the chat page, fetched by the core when it reads
/// their message.
#[async_trait]
impl Fetch for WebGateway {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        self.state.uploads.fetch(file, max_bytes)
    }
}
