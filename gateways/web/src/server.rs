//! The web gateway as the daemon runs it: bound when the daemon starts (so
//! the address is known — port 0 takes a free one), serving while it
//! listens, closing every event stream when it stops. A port another
//! program holds leaves the gateway down, saying why, while the daemon and
//! its other gateways run; it is bound again at each restart of the
//! gateway. Its health names the address people open, which is how
//! `passepartout web` and the tests find it. The core's replies and drafts
//! in web conversations go to the [`Hub`], to whoever waits on them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use passepartout_admin::Admin;
use passepartout_gateway::{
    ConversationKey, Deliver, Delivered, Draft, DraftPace, DraftText, Fetch, Fetched, FileRef, GatewayError, GatewayId,
    Health, HealthState, Intake, Listen, MessageId, Outbound, OutboundBody, OutboundFile,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::chats::Chats;
use crate::downloads::{self, Download, Downloads};
use crate::error::WebError;
use crate::host::Hosts;
use crate::hub::Hub;
use crate::keys::ApiKeys;
use crate::latency::Latency;
use crate::rate_limit::Guesses;
use crate::redact::LiveSecrets;
use crate::router::router;
use crate::serve::{self, Admit};
use crate::sessions::Sessions;
use crate::state::AppState;
use crate::streams::Streams;
use crate::surface::GATEWAY_ID;
use crate::threads::Threads;
use crate::uploads::Uploads;

/// Where the dashboard listens and the address people open.
#[derive(Clone, Debug)]
pub struct WebConfig {
    /// The address the dashboard listens on.
    pub listen: SocketAddr,
    /// `https://assistant.example.org`, when the dashboard is reached
    /// through another address than `listen`.
    pub public_url: Option<String>,
    /// Whether `/metrics` is served without a key.
    pub open_metrics: bool,
    /// The users of this machine (uids) let in besides the daemon's own.
    pub local_users: Vec<u32>,
    /// The daemon's configured secrets, kept out of every answer, as a
    /// reload brings them up to date.
    pub secrets: LiveSecrets,
}

/// The running dashboard.
pub struct WebGateway {
    id: GatewayId,
    /// Where to listen: bound at start, or again by `listen` when it could
    /// not be then.
    listen: SocketAddr,
    listener: Mutex<Option<TcpListener>>,
    /// Why it does not listen, while it cannot.
    failed: Mutex<Option<String>>,
    state: Arc<AppState>,
    /// Who may connect.
    admit: Admit,
    /// What people open: the public address, or the bound one.
    base_url: String,
    /// Ends every event stream when the gateway stops.
    stopped: CancellationToken,
}

impl WebGateway {
    /// Binds `config.listen`; the dashboard answers once it listens. An
    /// address that cannot be bound (another program holds the port) does
    /// not keep the daemon from starting: the gateway is down, says why,
    /// and tries again each time it is restarted.
    pub async fn bind(
        config: WebConfig,
        admin: Admin,
        sessions: Arc<dyn Sessions>,
        keys: Arc<dyn ApiKeys>,
        chats: Arc<dyn Chats>,
        threads: Arc<dyn Threads>,
    ) -> Arc<Self> {
        let (listener, failed) = match bind(config.listen).await {
            Ok(listener) => (Some(listener), None),
            Err(error) => {
                tracing::error!(%error, "the web dashboard cannot listen; the daemon runs without it");
                (None, Some(error.to_string()))
            }
        };
        let bound = listener
            .as_ref()
            .and_then(|listener| listener.local_addr().ok())
            .unwrap_or(config.listen);
        let public_url = config.public_url.as_deref().map(|url| url.trim_end_matches('/'));
        let base_url = public_url.map_or_else(|| format!("http://{bound}"), str::to_owned);
        // On this machine only, a browser sends the cookie to every local
        // server: only the daemon's own user is answered.
        let admit = if public_url.is_none() && bound.ip().is_loopback() {
            let own = rustix::process::geteuid().as_raw();
            Admit::LocalUsers(std::iter::once(own).chain(config.local_users.iter().copied()).collect())
        } else {
            Admit::Anyone
        };
        let stopped = CancellationToken::new();
        let state = Arc::new(AppState {
            hub: Arc::new(Hub::default()),
            intake: Mutex::new(None),
            keys,
            chats,
            threads,
            latency: Latency::default(),
            in_flight: Default::default(),
            secrets: config.secrets.clone(),
            metrics_open: config.open_metrics,
            admin: admin.asking_as(crate::posted::asker()),
            sessions,
            hosts: Hosts::new(bound, public_url),
            secure_cookie: public_url.is_some_and(|url| url.starts_with("https://")),
            guesses: Guesses::default(),
            streams: Streams::new(stopped.clone()),
            uploads: Uploads::default(),
            downloads: Downloads::default(),
        });
        if listener.is_some() {
            tracing::info!(listen = %bound, url = %base_url, "web dashboard bound");
        }
        Arc::new(Self {
            id: GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid"),
            listen: bound,
            listener: Mutex::new(listener),
            failed: Mutex::new(failed),
            state,
            admit,
            base_url,
            stopped,
        })
    }

    /// The address people open (`http://127.0.0.1:8787`), without a
    /// trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The listener bound at start, or bound now.
    async fn listener(&self) -> Result<TcpListener, WebError> {
        let bound = self.listener.lock().unwrap_or_else(PoisonError::into_inner).take();
        let listener = match bound {
            Some(listener) => Ok(listener),
            None => bind(self.listen).await,
        };
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = listener.as_ref().err().map(ToString::to_string);
        if listener.is_ok() {
            tracing::info!(listen = %self.listen, url = %self.base_url, "web dashboard bound");
        }
        listener
    }
}

/// A listener on `addr`.
async fn bind(addr: SocketAddr) -> Result<TcpListener, WebError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| WebError::Bind { addr, source })
}

#[async_trait]
impl Listen for WebGateway {
    fn id(&self) -> GatewayId {
        self.id.clone()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let listener = self.listener().await.map_err(|error| GatewayError::Transient {
            reason: error.to_string(),
        })?;
        *self.state.intake.lock().unwrap_or_else(PoisonError::into_inner) = Some(intake);
        let stopping = CancellationToken::new();
        let served = serve::serve(
            listener,
            router(self.state.clone()),
            self.admit.clone(),
            stopping.clone(),
        );
        let mut served = std::pin::pin!(served);
        let served = tokio::select! {
            served = served.as_mut() => served,
            () = shutdown.cancelled() => {
                // Messages are refused from now on; answers still being
                // written reach the requests waiting for them.
                self.state.intake.lock().unwrap_or_else(PoisonError::into_inner).take();
                // The event streams never end on their own.
                self.stopped.cancel();
                stopping.cancel();
                served.await
            }
        };
        served.map_err(|error| GatewayError::Transient {
            reason: format!("the dashboard stopped serving: {error}"),
        })
    }

    /// Up, naming the address people open; down, saying why, while the
    /// address cannot be bound.
    fn health(&self) -> Health {
        match self.failed.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            Some(reason) => Health::with(HealthState::Down, reason.clone()),
            None => Health::with(HealthState::Up, self.base_url.clone()),
        }
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
            self.hold(&message.id, message.conversation.chat.as_str(), file).await?;
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
    async fn hold(&self, outbound_id: &str, chat: &str, file: &OutboundFile) -> Result<(), GatewayError> {
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
            chat: chat.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::chain::Tip;
    use crate::chats::WebChat;
    use crate::keys::Key;
    use crate::sessions::SessionsUnavailable;
    use passepartout_gateway::ChatId;

    /// Nobody signed in, no keys: this test asks nothing of them.
    struct Nobody;

    impl Sessions for Nobody {
        fn redeem(&self, _: &str, _: &str) -> Result<Option<String>, SessionsUnavailable> {
            Ok(None)
        }
        fn check(&self, _: &str) -> Result<bool, SessionsUnavailable> {
            Ok(false)
        }
        fn end(&self, _: &str) -> Result<(), SessionsUnavailable> {
            Ok(())
        }
    }

    impl ApiKeys for Nobody {
        fn check(&self, _: &str) -> Result<Option<Key>, SessionsUnavailable> {
            Ok(None)
        }
    }

    impl Threads for Nobody {
        fn find(&self, _: &str, _: &Tip) -> Result<Option<ChatId>, SessionsUnavailable> {
            Ok(None)
        }
        fn advance(&self, _: &str, _: &ChatId, _: &Tip) -> Result<(), SessionsUnavailable> {
            Ok(())
        }
    }

    impl Chats for Nobody {
        fn list(&self) -> Result<Vec<WebChat>, SessionsUnavailable> {
            Ok(Vec::new())
        }
        fn get(&self, _: &str) -> Result<Option<WebChat>, SessionsUnavailable> {
            Ok(None)
        }
        fn open(&self) -> Result<WebChat, SessionsUnavailable> {
            Err(SessionsUnavailable { message: "none".into() })
        }
        fn sent(&self, _: &str, _: &str) -> Result<(), SessionsUnavailable> {
            Ok(())
        }
        fn rename(&self, _: &str, _: &str) -> Result<bool, SessionsUnavailable> {
            Ok(false)
        }
        fn delete(&self, _: &str) -> Result<bool, SessionsUnavailable> {
            Ok(false)
        }
    }

    #[tokio::test]
    async fn a_port_held_elsewhere_leaves_it_down_until_it_is_free() {
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let listen = holder.local_addr().unwrap();
        let config = WebConfig {
            listen,
            public_url: None,
            open_metrics: false,
            local_users: Vec::new(),
            secrets: LiveSecrets::new(Default::default()),
        };
        let (admin, _queue) = Admin::channel(1);
        let web = WebGateway::bind(
            config,
            admin,
            Arc::new(Nobody),
            Arc::new(Nobody),
            Arc::new(Nobody),
            Arc::new(Nobody),
        )
        .await;
        let health = web.health();
        assert_eq!(health.state, HealthState::Down);
        let said = health.detail.clone().unwrap_or_default();
        assert!(said.contains(&listen.to_string()), "{health:?}");
        assert!(web.listener().await.is_err(), "still held");

        drop(holder);
        let listener = web.listener().await.expect("bound once it is free");
        assert_eq!(listener.local_addr().unwrap(), listen);
        assert_eq!(web.health().state, HealthState::Up);
        assert_eq!(web.health().detail, Some(format!("http://{listen}")));
    }
}
