//! [`TelegramGateway`]: the Bot API client behind the contract's [`Listen`]
//! and [`Deliver`].
//!
//! teloxide's `Bot` is used only as an HTTP client — no dispatcher — so the
//! gateway decides when an update counts as handled (see [`crate::poll`]).
//! Replies go out as plain text with entities, never a `parse_mode` (so
//! nothing can fail to parse), split at Telegram's limit (see [`crate::reply`]);
//! approval prompts carry Approve / Always / Deny buttons whose
//! `callback_data` is `approve:TOKEN` / `always:TOKEN` / `deny:TOKEN`
//! (Always approves and lets calls like it run in the chat without asking;
//! the prompt's text says which).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{
    ConversationKey, Deliver, Delivered, GatewayError, GatewayId, Health, HealthState, Intake, Listen, MessageId,
    Outbound, OutboundBody, Refusals, Resume, send_parts,
};
use teloxide::Bot;
use teloxide::payloads::{EditMessageCaptionSetters, EditMessageTextSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{self as tg, ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, ReplyParameters};
use tokio_util::sync::CancellationToken;

use crate::GATEWAY_ID;
use crate::failure::{Failure, TOKEN_REFUSED, describe, redact};
use crate::offset::OffsetStore;
use crate::pacing::Pacing;
use crate::reply::{Part, parts};
use crate::settings::TelegramSettings;

/// How long a long poll may take beyond its own timeout before the HTTP
/// client gives up on it.
const POLL_SLACK: Duration = Duration::from_secs(10);
/// How long to wait for Telegram to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `callback_data` prefix of the Approve button.
pub const APPROVE_PREFIX: &str = "approve:";
/// `callback_data` prefix of the Always button.
pub const ALWAYS_PREFIX: &str = "always:";
/// `callback_data` prefix of the Deny button.
pub const DENY_PREFIX: &str = "deny:";

/// The Telegram gateway. Shared by the daemon's listener and its delivery
/// side, hence always in an [`Arc`].
pub struct TelegramGateway {
    pub(crate) settings: TelegramSettings,
    pub(crate) offsets: Arc<dyn OffsetStore>,
    /// The Bot API client, or why it could not be built (a bad `api_url`).
    bot: Result<Bot, String>,
    id: GatewayId,
    health: Mutex<Health>,
    /// How many updates were skipped because they could not be read; shown
    /// in the health detail while the gateway is up.
    unreadable: AtomicU64,
    /// When each person who is not allowed was last told so.
    pub(crate) refused: Refusals,
    /// The send slots that keep the bot inside Telegram's rate limits.
    pub(crate) pacing: Pacing,
}

impl std::fmt::Debug for TelegramGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramGateway")
            .field("settings", &self.settings)
            .field("health", &self.health())
            .finish_non_exhaustive()
    }
}

impl TelegramGateway {
    /// A gateway for `settings` that starts polling from `offsets.load()`.
    /// Touches no network; a bad `api_url` shows in [`Listen::health`] and
    /// makes `listen` and `deliver` fail.
    pub fn new(settings: TelegramSettings, offsets: Arc<dyn OffsetStore>) -> Arc<Self> {
        let bot = build_bot(&settings);
        let pacing = Pacing::new(settings.pacing);
        let health = match &bot {
            Ok(_) => Health::with(HealthState::Starting, "not polling yet"),
            Err(reason) => Health::with(HealthState::Down, reason.clone()),
        };
        Arc::new(Self {
            settings,
            offsets,
            bot,
            id: GatewayId::new(GATEWAY_ID).expect("\"telegram\" is a valid gateway id"),
            health: Mutex::new(health),
            unreadable: AtomicU64::new(0),
            refused: Refusals::default(),
            pacing,
        })
    }

    pub(crate) fn bot(&self) -> Result<&Bot, GatewayError> {
        self.bot
            .as_ref()
            .map_err(|reason| GatewayError::Rejected { reason: reason.clone() })
    }

    pub(crate) fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    /// The health of a gateway that polls fine: up, with the count of
    /// unreadable updates skipped so far, if any.
    pub(crate) fn up(&self) -> Health {
        match self.unreadable.load(Ordering::Relaxed) {
            0 => Health::up(),
            1 => Health::with(HealthState::Up, "skipped 1 unreadable update"),
            n => Health::with(HealthState::Up, format!("skipped {n} unreadable updates")),
        }
    }

    /// Counts an update skipped because it could not be read, at once in
    /// the health if the gateway is up.
    pub(crate) fn count_unreadable(&self) {
        self.unreadable.fetch_add(1, Ordering::Relaxed);
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if health.state == HealthState::Up {
            *health = self.up();
        }
    }

    pub(crate) fn classify(&self, error: &teloxide::RequestError) -> Failure {
        Failure::classify(error, &self.settings.token)
    }

    /// Sends the `parts` of a reply to `chat`, in order, each as plain text
    /// with its entities; the first part quotes `reply_to` if given (and is
    /// sent anyway if that message is gone). `keyboard` goes on the last
    /// part. Parts before `resume.first_part` went out before and are
    /// skipped. The first of them take over the messages of the reply's
    /// `drafts`, which are edited to be those parts; drafts left over are
    /// removed.
    pub(crate) async fn send_text(
        &self,
        chat: tg::ChatId,
        parts: Vec<Part>,
        reply_to: Option<tg::MessageId>,
        keyboard: Option<InlineKeyboardMarkup>,
        drafts: &[MessageId],
        resume: Resume<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        if parts.is_empty() {
            return Err(GatewayError::Rejected {
                reason: "the message is empty".to_owned(),
            });
        }
        let last = parts.len() - 1;
        let sent = send_parts(parts, resume, |index, part| {
            let keyboard = keyboard.as_ref().filter(|_| index == last);
            let draft = drafts.get(index);
            async move {
                if let Some(draft) = draft
                    && self.edit_part(chat, draft, &part, keyboard).await?
                {
                    return Ok(Some(draft.clone()));
                }
                self.send_part(chat, index, part, reply_to, keyboard).await
            }
        })
        .await?;
        self.delete_drafts_in_passing(chat, drafts.get(last + 1..).unwrap_or_default())
            .await;
        Ok(sent)
    }

    /// Sends part `index` of a reply: quoting `reply_to` when it is the
    /// first, with `keyboard` under it when given.
    pub(crate) async fn send_part(
        &self,
        chat: tg::ChatId,
        index: usize,
        part: Part,
        reply_to: Option<tg::MessageId>,
        keyboard: Option<&InlineKeyboardMarkup>,
    ) -> Result<Option<MessageId>, GatewayError> {
        let bot = self.bot()?;
        let request = |text: String, entities: Vec<tg::MessageEntity>| {
            let mut request = bot.send_message(chat, text);
            if !entities.is_empty() {
                request = request.entities(entities);
            }
            if let (0, Some(reply_to)) = (index, reply_to) {
                request = request.reply_parameters(ReplyParameters::new(reply_to).allow_sending_without_reply());
            }
            if let Some(keyboard) = keyboard {
                request = request.reply_markup(keyboard.clone());
            }
            request
        };
        // Kept for the one retry below, when there is formatting to drop.
        let plain = (!part.entities.is_empty()).then(|| request(part.text.clone(), Vec::new()));
        let styled = request(part.text, part.entities);
        self.pacing.wait_turn(chat.0).await;
        let failure = match styled.await {
            Ok(sent) => return Ok(Some(sent_id(&sent))),
            Err(error) => self.classify(&error),
        };
        tracing::warn!(chat = chat.0, part = index, error = ?failure, "sendMessage failed");
        // Telegram checks some formatting more strictly than it
        // documents (a link's host, how much entity data): a part
        // it refuses for that goes again as plain text, never lost.
        let (Some(plain), Failure::Rejected { reason }) = (plain, &failure) else {
            return Err(failure.into_gateway_error());
        };
        if !refuses_formatting(reason) {
            return Err(failure.into_gateway_error());
        }
        self.pacing.wait_turn(chat.0).await;
        let sent = plain.await.map_err(|error| {
            let failure = self.classify(&error);
            tracing::warn!(chat = chat.0, part = index, error = ?failure, "sendMessage failed as plain text too");
            failure.into_gateway_error()
        })?;
        Ok(Some(sent_id(&sent)))
    }

    /// Edits a decided approval's prompt to `text`, which removes its
    /// buttons. A second edit to the same text ("message is not modified",
    /// after a redelivery) counts as done.
    /// Shows `text` in the bot's own message `prompt` instead of what it
    /// said (a decided prompt's outcome, a relayed copy's edit).
    async fn replace_text(&self, chat: tg::ChatId, prompt: &MessageId, text: &str) -> Result<(), GatewayError> {
        let Some(prompt) = telegram_message_id(prompt) else {
            return Err(GatewayError::Rejected {
                reason: format!("{prompt} is not a Telegram message id"),
            });
        };
        // An outcome is a line or two, a copy one message: its first part is all of it.
        let shown = parts(text).into_iter().next().unwrap_or(Part {
            text: text.to_owned(),
            entities: Vec::new(),
        });
        let mut edit = self.bot()?.edit_message_text(chat, prompt, shown.text.clone());
        if !shown.entities.is_empty() {
            edit = edit.entities(shown.entities.clone());
        }
        let edited = match edit.await {
            // A photo or a file (a relayed copy of one) shows its text as its caption.
            Err(error) if error.to_string().contains("no text in the message") => {
                let mut caption = self.bot()?.edit_message_caption(chat, prompt).caption(shown.text);
                if !shown.entities.is_empty() {
                    caption = caption.caption_entities(shown.entities);
                }
                caption.await.map(drop)
            }
            edited => edited.map(drop),
        };
        match edited {
            Ok(()) => Ok(()),
            Err(error) if error.to_string().contains("message is not modified") => Ok(()),
            Err(error) => {
                let failure = self.classify(&error);
                tracing::warn!(chat = chat.0, error = ?failure, "editing a message of the bot's failed");
                Err(failure.into_gateway_error())
            }
        }
    }

    /// The Telegram chat of `conversation`.
    pub(crate) fn chat_of(&self, conversation: &ConversationKey) -> Result<tg::ChatId, GatewayError> {
        if conversation.gateway != self.id {
            return Err(GatewayError::Rejected {
                reason: format!("{conversation} is not a Telegram conversation"),
            });
        }
        conversation
            .chat
            .as_str()
            .parse::<i64>()
            .map(tg::ChatId)
            .map_err(|_| GatewayError::Rejected {
                reason: format!("{conversation} does not name a Telegram chat id"),
            })
    }
}

/// The contract's id of a message the bot sent.
/// Whether Telegram refused a message for its formatting: its entities, or
/// a link's URL in one.
pub(crate) fn refuses_formatting(reason: &str) -> bool {
    let reason = reason.to_ascii_lowercase();
    ["entit", "url"].iter().any(|word| reason.contains(word))
}

pub(crate) fn sent_id(sent: &tg::Message) -> MessageId {
    MessageId::new(sent.id.0.to_string()).expect("a number is a valid message id")
}

/// The message `id` names, if it is a Telegram message id.
pub(crate) fn telegram_message_id(id: &MessageId) -> Option<tg::MessageId> {
    id.as_str().parse::<i32>().ok().map(tg::MessageId)
}

/// The Approve / Always / Deny keyboard of an approval prompt.
pub fn approval_keyboard(token: &passepartout_gateway::ApprovalToken) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([[
        InlineKeyboardButton::callback("Approve", format!("{APPROVE_PREFIX}{token}")),
        InlineKeyboardButton::callback("Always", format!("{ALWAYS_PREFIX}{token}")),
        InlineKeyboardButton::callback("Deny", format!("{DENY_PREFIX}{token}")),
    ]])
}

pub(crate) fn build_bot(settings: &TelegramSettings) -> Result<Bot, String> {
    let url = reqwest::Url::parse(&settings.api_url)
        .map_err(|error| format!("invalid Telegram api_url {:?}: {error}", settings.api_url))?;
    let mut client = teloxide::net::default_reqwest_settings()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(Duration::from_secs(settings.poll_timeout_s.into()) + POLL_SLACK);
    if let Some(proxy) = &settings.proxy {
        // Not the URL in the message: it may hold credentials.
        let proxy = reqwest::Proxy::all(proxy).map_err(|_| "telegram.proxy is not a proxy URL".to_owned())?;
        client = client.proxy(proxy);
    }
    let client = client
        .build()
        .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
    Ok(Bot::with_client(settings.token.clone(), client).set_api_url(url))
}

/// Asks Telegram who the bot is, for `doctor`: `"@botname"`, or why not.
pub async fn check(settings: &TelegramSettings) -> Result<String, String> {
    checked(settings).await.map(|bot| bot.name)
}

/// What getMe says of the bot that `doctor` acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedBot {
    /// `"@botname"`.
    pub name: String,
    /// Whether it sees every message in its groups (privacy mode off), as
    /// a bridged group needs.
    pub reads_all_group_messages: bool,
}

/// [`check`], with what else getMe says.
pub async fn checked(settings: &TelegramSettings) -> Result<CheckedBot, String> {
    let bot = build_bot(settings)?;
    match bot.get_me().await {
        Ok(me) => Ok(CheckedBot {
            name: format!("@{}", me.username()),
            reads_all_group_messages: me.can_read_all_group_messages,
        }),
        Err(error) => Err(match Failure::classify(&error, &settings.token) {
            Failure::Unauthorized => format!("{TOKEN_REFUSED} ({})", redact(&describe(&error), &settings.token)),
            _ => redact(&describe(&error), &settings.token),
        }),
    }
}

#[async_trait]
impl Listen for TelegramGateway {
    fn id(&self) -> GatewayId {
        self.id.clone()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        self.poll(intake, shutdown).await
    }

    fn health(&self) -> Health {
        self.health.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[async_trait]
impl Deliver for TelegramGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        self.deliver_from(message, Resume::whole()).await
    }

    async fn deliver_from(&self, message: &Outbound, resume: Resume<'_>) -> Result<Delivered, GatewayError> {
        let chat = self.chat_of(&message.conversation)?;
        let reply_to = message.in_reply_to.as_ref().and_then(telegram_message_id);
        let message_ids = match &message.body {
            OutboundBody::Text { text, .. } => {
                let drafts = &message.drafts;
                self.send_text(chat, parts(text), reply_to, None, drafts, resume)
                    .await?
            }
            OutboundBody::ApprovalPrompt { token, text, .. } => {
                self.delete_drafts_in_passing(chat, &message.drafts).await;
                let keyboard = Some(approval_keyboard(token));
                self.send_text(chat, parts(text), reply_to, keyboard, &[], resume)
                    .await?
            }
            OutboundBody::ApprovalDecided {
                prompt: message, text, ..
            }
            | OutboundBody::Edit { message, text } => {
                self.replace_text(chat, message, text).await?;
                Vec::new()
            }
            OutboundBody::File(file) => {
                self.delete_drafts_in_passing(chat, &message.drafts).await;
                vec![self.send_file(chat, file, reply_to).await?]
            }
            // A stopped reply's draft goes: the answer to `/stop` says what
            // was kept. Until it is gone, the entry stays in the outbox.
            OutboundBody::Withdraw | OutboundBody::Stopped { .. } => {
                self.delete_drafts(chat, &message.drafts).await?;
                Vec::new()
            }
        };
        tracing::debug!(chat = chat.0, outbound_id = %message.id, parts = message_ids.len(), "delivered to Telegram");
        Ok(Delivered { message_ids })
    }

    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        let chat = self.chat_of(conversation)?;
        self.bot()?
            .send_chat_action(chat, ChatAction::Typing)
            .await
            .map(drop)
            .map_err(|error| self.classify(&error).into_gateway_error())
    }
}
