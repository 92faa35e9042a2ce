//! [`SignalGateway`]: the signal-cli client behind the contract's [`Listen`]
//! and [`Deliver`].
//!
//! One connection is shared: the listener (see `listen`) makes it, subscribes
//! and stores it here; delivery uses it, or makes one of its own while the
//! listener is reconnecting. Replies go out as text with text styles (see
//! [`crate::reply`]) split to [`SignalSettings::text_limit`], the first part
//! quoting the message answered.
//! Approval prompts go out as their text (which says how to answer); Signal
//! has no buttons, and a decided prompt is left as it is.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use passepartout_gateway::{
    ConversationKey, Deliver, Delivered, GatewayError, GatewayId, Health, HealthState, Intake, Listen, MessageId,
    Outbound, OutboundBody, Refusals, Resume, send_parts,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::GATEWAY_ID;
use crate::admission::Admission;
use crate::failure::{delivery_error, send_outcome};
use crate::message_id::{message_id, parse};
use crate::normalize::{BotIdentity, GROUP_PREFIX, note_to_self_chat};
use crate::own_sends::OwnSends;
use crate::reply::{Part, parts};
use crate::rpc::{Notifications, RpcClient, RpcOptions};
use crate::settings::{SignalSettings, Transport};

/// The Signal gateway. Shared by the daemon's listener and its delivery side,
/// hence always in an [`Arc`].
#[derive(Debug)]
pub struct SignalGateway {
    pub(crate) settings: SignalSettings,
    pub(crate) bot: BotIdentity,
    id: GatewayId,
    health: Mutex<Health>,
    /// The current connection, if any.
    client: Mutex<Option<RpcClient>>,
    /// When each person who is not allowed was last told so.
    pub(crate) refused: Refusals,
    /// Which messages reach the core at all (on a person's own account,
    /// Note to Self and the listed only).
    pub(crate) admission: Admission,
    /// What was sent, so that it is never taken back in as a note to self.
    pub(crate) own_sends: OwnSends,
}

/// Where a message goes: one person or a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Person(String),
    Group(String),
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SignalGateway {
    /// A gateway for `settings`. Touches no socket until `listen` or `deliver`.
    pub fn new(settings: SignalSettings) -> Arc<Self> {
        Arc::new(Self {
            bot: settings.bot_identity(),
            admission: Admission::of(&settings),
            own_sends: OwnSends::default(),
            settings,
            id: GatewayId::new(GATEWAY_ID).expect("\"signal\" is a valid gateway id"),
            health: Mutex::new(Health::with(HealthState::Starting, "not connected yet")),
            client: Mutex::new(None),
            refused: Refusals::default(),
        })
    }

    pub(crate) fn set_health(&self, health: Health) {
        *lock(&self.health) = health;
    }

    /// A new connection to signal-cli; it becomes the shared one.
    pub(crate) async fn connect(&self) -> Result<(RpcClient, Notifications), crate::RpcError> {
        let options = RpcOptions {
            call_timeout: self.settings.call_timeout,
            max_line_bytes: self.settings.max_line_bytes(),
            ..RpcOptions::default()
        };
        let (client, notifications) = self.settings.open(options).await?;
        // The old connection closes when its last user is done with it: a
        // delivery in flight on it must not fail (and be sent twice).
        *lock(&self.client) = Some(client.clone());
        Ok((client, notifications))
    }

    /// The shared connection, made anew if there is none — except a spawned
    /// signal-cli, which only the listener starts: a second child would wait
    /// on the first one's lock of the account, so the reply waits instead.
    pub(crate) async fn client(&self) -> Result<RpcClient, GatewayError> {
        let current = lock(&self.client).clone().filter(|client| !client.is_closed());
        match (current, &self.settings.transport) {
            (Some(client), _) => Ok(client),
            (None, Transport::Spawn(_)) => Err(GatewayError::Transient {
                reason: "the spawned signal-cli is starting again".to_owned(),
            }),
            (None, Transport::Connect(_)) => Ok(self.connect().await.map_err(|error| delivery_error(&error))?.0),
        }
    }

    /// `params` with the account added when the daemon serves several.
    pub(crate) fn params(&self, mut params: Value) -> Value {
        if self.settings.multi_account {
            params["account"] = json!(self.settings.account);
        }
        params
    }

    /// Calls `send` with `params` (the account added) over `client`: the
    /// timestamp Signal names the message by, remembered as one of ours so
    /// that its echo is never taken as input. A failure is logged with
    /// `conversation`, `what` was sent (a reply, a file, a prompt's edit)
    /// and which `part` of it.
    pub(crate) async fn send_call(
        &self,
        client: &RpcClient,
        params: Value,
        conversation: &ConversationKey,
        (what, part): (&'static str, usize),
    ) -> Result<u64, GatewayError> {
        let result = client.call("send", self.params(params)).await.map_err(|error| {
            tracing::warn!(%conversation, what, part, %error, "Signal send failed");
            delivery_error(&error)
        })?;
        let timestamp = send_outcome(&result)?;
        self.own_sends.remember(timestamp);
        Ok(timestamp)
    }

    /// Whether `conversation` is the account's Note to Self (on a person's
    /// own account; a dedicated number has none).
    pub(crate) fn is_note_to_self(&self, conversation: &ConversationKey) -> bool {
        self.settings.note_to_self && conversation.chat.as_str() == note_to_self_chat(&self.settings.account)
    }

    /// Where `conversation`'s messages go.
    pub(crate) fn target(&self, conversation: &ConversationKey) -> Result<Target, GatewayError> {
        if conversation.gateway != self.id {
            return Err(GatewayError::Rejected {
                reason: format!("{conversation} is not a Signal conversation"),
            });
        }
        let chat = conversation.chat.as_str();
        Ok(match chat.strip_prefix(GROUP_PREFIX) {
            Some(group) => Target::Group(group.to_owned()),
            None => Target::Person(chat.to_owned()),
        })
    }

    /// The quote of a reply to `message`: its timestamp and author (the
    /// bot's account when the id names none). Ids the gateway did not make
    /// are not quoted.
    pub(crate) fn quote(&self, message: &MessageId) -> Option<(u64, String)> {
        let message = parse(message)?;
        let author = message.author.unwrap_or(&self.settings.account);
        Some((message.timestamp, author.to_owned()))
    }

    /// Sends the `parts` of a reply to `conversation`, in order; the first
    /// part quotes `reply_to`.
    pub(crate) async fn send_text(
        &self,
        conversation: &ConversationKey,
        parts: Vec<Part>,
        reply_to: Option<&MessageId>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        self.send_text_from(conversation, parts, reply_to, Resume::whole())
            .await
    }

    /// [`send_text`](Self::send_text) from part `resume.first_part` on.
    pub(crate) async fn send_text_from(
        &self,
        conversation: &ConversationKey,
        parts: Vec<Part>,
        reply_to: Option<&MessageId>,
        resume: Resume<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        let target = self.target(conversation)?;
        if parts.is_empty() {
            return Err(GatewayError::Rejected {
                reason: "the message is empty".to_owned(),
            });
        }
        let quote = reply_to.and_then(|message| self.quote(message));
        let client = self.client().await?;
        send_parts(parts, resume, |index, part| {
            let mut params = target_params(&target);
            params["message"] = json!(part.text);
            if !part.styles.is_empty() {
                params["textStyle"] = json!(part.styles);
            }
            if let (0, Some((timestamp, author))) = (index, &quote) {
                params["quoteTimestamp"] = json!(timestamp);
                params["quoteAuthor"] = json!(author);
            }
            let client = &client;
            async move {
                let timestamp = self.send_call(client, params, conversation, ("reply", index)).await?;
                Ok(message_id(timestamp, None))
            }
        })
        .await
    }
}

pub(crate) fn target_params(target: &Target) -> Value {
    match target {
        Target::Person(person) => json!({ "recipient": [person] }),
        Target::Group(group) => json!({ "groupId": group }),
    }
}

#[async_trait]
impl Listen for SignalGateway {
    fn id(&self) -> GatewayId {
        self.id.clone()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        self.run(intake, shutdown).await
    }

    fn health(&self) -> Health {
        lock(&self.health).clone()
    }

    async fn close(&self) {
        if let Some(client) = lock(&self.client).take() {
            client.close();
        }
    }
}

#[async_trait]
impl Deliver for SignalGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        self.deliver_from(message, Resume::whole()).await
    }

    async fn deliver_from(&self, message: &Outbound, resume: Resume<'_>) -> Result<Delivered, GatewayError> {
        let reply_to = message.in_reply_to.as_ref();
        let message_ids = match &message.body {
            OutboundBody::Text { text, .. } => {
                let parts = parts(text, self.settings.text_limit);
                self.send_text_from(&message.conversation, parts, reply_to, resume)
                    .await?
            }
            OutboundBody::ApprovalPrompt { text, .. } => {
                let parts = parts(text, self.settings.text_limit);
                self.send_text_from(&message.conversation, parts, reply_to, resume)
                    .await?
            }
            OutboundBody::ApprovalDecided {
                prompt: message_id,
                text,
                ..
            }
            | OutboundBody::Edit {
                message: message_id,
                text,
            } => {
                self.show_decided(&message.conversation, message_id, text).await?;
                Vec::new()
            }
            OutboundBody::File(file) => self.send_file(&message.conversation, file, reply_to).await?,
            // Until the drafts are gone, the entry stays in the outbox.
            OutboundBody::Withdraw | OutboundBody::Stopped { .. } => {
                self.delete_drafts(&message.conversation, &message.drafts).await?;
                Vec::new()
            }
        };
        tracing::debug!(
            conversation = %message.conversation,
            outbound_id = %message.id,
            parts = message_ids.len(),
            "delivered to Signal"
        );
        Ok(Delivered { message_ids })
    }

    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        let target = self.target(conversation)?;
        // Nobody to show it to: the person writes to themselves.
        if self.is_note_to_self(conversation) {
            return Ok(());
        }
        let client = self.client().await?;
        client
            .call("sendTyping", self.params(target_params(&target)))
            .await
            .map(drop)
            .map_err(|error| delivery_error(&error))
    }
}
