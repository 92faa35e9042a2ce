//! The first person to write to the bot, for `passepartout setup`: it long-polls
//! `getUpdates` until a message arrives in a private chat, takes its sender
//! as the bot's owner, confirms the updates up to it (so the daemon, polling
//! later from no stored offset, never sees them) and answers in the chat, so
//! the person knows it worked.
//!
//! Other updates before it (a group message, a button press) are stepped over
//! and confirmed with it; updates after it are left for the daemon.

use std::time::Duration;

use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, ChatId, UpdateKind};
use tokio::time::Instant;

use crate::failure::{Failure, TOKEN_REFUSED};
use crate::gateway::build_bot;
use crate::settings::TelegramSettings;
use crate::updates::{Answer, GetUpdates, Item, get_updates};

/// The longest one long poll waits here: well inside the HTTP client's own
/// timeout, and short enough that the deadline is kept closely.
const LONGEST_POLL_S: u64 = 10;

/// Who wrote first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contact {
    /// Their Telegram user id.
    pub user_id: i64,
    /// Their private chat with the bot.
    pub chat_id: i64,
    /// How they call themselves: `@username`, else their first name.
    pub name: String,
    /// Whether the answer in their chat was delivered.
    pub answered: bool,
}

/// Why no one could be captured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ContactError {
    /// Nobody wrote to the bot in private within the time given.
    #[error("no one wrote to the bot within {} s", .0.as_secs())]
    Timeout(Duration),
    /// Telegram refused the token.
    #[error("{TOKEN_REFUSED}")]
    Unauthorized,
    /// Another poller (a running daemon?) or a webhook takes the updates.
    #[error("another program takes this bot's updates (a running passepartout, or a webhook): {0}")]
    Conflict(String),
    /// A Bot API call failed, or its answer could not be read.
    #[error("the Bot API failed: {0}")]
    Failed(String),
}

/// Waits up to `within` for the first private message to the bot, confirms
/// it and answers `greeting` to its sender.
pub async fn first_contact(
    settings: &TelegramSettings,
    within: Duration,
    greeting: &str,
) -> Result<Contact, ContactError> {
    let mut settings = settings.clone();
    settings.poll_timeout_s = LONGEST_POLL_S as u32;
    let bot = build_bot(&settings).map_err(ContactError::Failed)?;
    let deadline = Instant::now() + within;
    let mut offset = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ContactError::Timeout(within));
        }
        let params = GetUpdates {
            offset,
            limit: None,
            timeout: left.as_secs().min(LONGEST_POLL_S) as u32,
            allowed_updates: &[AllowedUpdate::Message],
        };
        let items = match get_updates(&bot, &params).await {
            Ok(Answer::Updates(items)) => items,
            Ok(Answer::Refused(error)) | Err(error) => {
                return Err(match Failure::classify(&error, &settings.token) {
                    Failure::Unauthorized => ContactError::Unauthorized,
                    Failure::Conflict { detail } => ContactError::Conflict(detail),
                    Failure::RetryAfter(wait) => {
                        tokio::time::sleep(wait.min(left)).await;
                        continue;
                    }
                    Failure::Rejected { reason } | Failure::Transient { reason } | Failure::Unreachable { reason } => {
                        ContactError::Failed(reason)
                    }
                });
            }
            Ok(Answer::Unreadable(reason)) => return Err(ContactError::Failed(reason)),
        };
        for item in items {
            let (update_id, found) = match item {
                Item::Update(update) => (update.id.0 as i64, sender(&update.kind)),
                Item::Unreadable {
                    update_id: Some(update_id),
                    ..
                } => (update_id, None),
                Item::Unreadable { update_id: None, .. } => continue,
            };
            offset = Some(offset.unwrap_or(0).max(update_id + 1));
            if let Some((user_id, chat_id, name)) = found {
                confirm(&bot, update_id + 1).await;
                let answered = bot.send_message(ChatId(chat_id), greeting).await.is_ok();
                return Ok(Contact {
                    user_id,
                    chat_id,
                    name,
                    answered,
                });
            }
        }
    }
}

/// The sender of a message in a private chat, with the chat and a name.
fn sender(kind: &UpdateKind) -> Option<(i64, i64, String)> {
    let UpdateKind::Message(message) = kind else {
        return None;
    };
    let from = message.from.as_ref()?;
    if from.is_bot || !message.chat.is_private() {
        return None;
    }
    let name = match &from.username {
        Some(username) => format!("@{username}"),
        None => from.first_name.clone(),
    };
    Some((from.id.0 as i64, message.chat.id.0, name))
}

/// Confirms every update before `offset`: Telegram forgets them once a
/// `getUpdates` asks for what comes after. Best effort: the daemon would
/// take an unconfirmed `/start` as one more message, no harm done.
async fn confirm(bot: &teloxide::Bot, offset: i64) {
    let params = GetUpdates {
        offset: Some(offset),
        limit: Some(1),
        timeout: 0,
        allowed_updates: &[AllowedUpdate::Message],
    };
    if let Err(error) = get_updates(bot, &params).await {
        tracing::debug!(error = %crate::failure::redact(&error.to_string(), bot.token()), "could not confirm the first update");
    }
}
