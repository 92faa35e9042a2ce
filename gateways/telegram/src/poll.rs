//! The long-polling loop behind [`Listen::listen`](passepartout_gateway::Listen::listen).
//!
//! At start: `getMe` (the bot's username, to recognise mentions in groups),
//! `getWebhookInfo` and `deleteWebhook` if one is set (a webhook makes
//! `getUpdates` fail), `setMyCommands`. Then, over and over: `getUpdates` from
//! the saved offset; each update in order is normalized and submitted to the
//! core; the offset moves past an update only once the core acknowledged it
//! (or it was skipped), and is saved after each batch, before the next
//! `getUpdates` confirms it to Telegram. A `Busy` core ends the batch there:
//! the update comes again on the next poll.
//!
//! Failures: a 409 Conflict (another poller or a webhook) and a 429 wait as
//! long as they must; a refused token ends the loop with
//! [`GatewayError::Unauthorized`]; anything else backs off exponentially.
//!
//! Unreadable updates: each update is parsed on its own (see
//! [`crate::updates`]); one that does not parse is logged by its `update_id`
//! and why, counted in the health, and skipped like any other. An answer that
//! does not parse as a whole names no update to skip, so after
//! [`ISOLATE_AFTER`] of them in a row the loop asks for one update at a time
//! (`limit=1`): the good updates before the bad one come through one by one,
//! and when a single-update answer is still unreadable, that update is
//! skipped by moving the offset one past the last known one. Never the same
//! answer forever.

use std::convert::Infallible;

use passepartout_gateway::retry::{Backoff, sleep_or_shutdown};
use passepartout_gateway::{Ack, GatewayError, Health, HealthState, Inbound, Intake, Refusal, unix_ms};
use teloxide::payloads::{AnswerCallbackQuerySetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, BotCommand, CallbackQueryId, ReplyParameters, UpdateKind};
use teloxide::{Bot, types as tg};
use tokio_util::sync::CancellationToken;

use crate::failure::{Failure, TOKEN_REFUSED};
use crate::gateway::{TelegramGateway, telegram_message_id};
use crate::normalize::{Normalized, normalize};
use crate::updates::{Answer, GetUpdates, Item, get_updates};

/// The alert a person sees who pressed a button of an approval they may
/// not decide, or of none (a forged one): the same, so that it tells
/// nobody whether the approval exists.
const NOT_APPROVER: &str = "You are not allowed to approve this, or nothing waits for this answer.";

/// The update kinds the gateway asks for.
const ALLOWED_UPDATES: [AllowedUpdate; 4] = [
    AllowedUpdate::Message,
    // Only a bridged group's are taken: they change the copies.
    AllowedUpdate::EditedMessage,
    AllowedUpdate::CallbackQuery,
    AllowedUpdate::MessageReaction,
];

/// How many unreadable `getUpdates` answers in a row before the loop asks
/// for one update at a time, to find the one at fault.
const ISOLATE_AFTER: u32 = 3;

/// How a batch of updates ended.
enum BatchEnd {
    /// Every update was handled.
    Done,
    /// The core is busy; the rest comes again.
    Busy,
    /// `shutdown` fired.
    Shutdown,
    /// The core takes no more messages.
    IntakeClosed,
}

/// Why the loop stops waiting.
enum Stop {
    Shutdown,
    Fatal(GatewayError),
}

/// The failure bookkeeping of one run of the loop.
struct Trouble {
    backoff: Backoff,
    /// Whether the current run of conflicts was already warned about.
    conflict_warned: bool,
    /// Look for a webhook again before the next poll (after a conflict).
    recheck_webhook: bool,
    /// Unreadable answers in a row; from [`ISOLATE_AFTER`] on, polls ask for
    /// one update only.
    unreadable: u32,
}

impl TelegramGateway {
    pub(crate) async fn poll(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let bot = match self.bot() {
            Ok(bot) => bot.clone(),
            Err(error) => {
                self.set_health(Health::with(HealthState::Down, error.to_string()));
                return Err(error);
            }
        };
        let mut trouble = Trouble {
            backoff: Backoff::new(self.settings.backoff_base, self.settings.backoff_max),
            conflict_warned: false,
            recheck_webhook: false,
            unreadable: 0,
        };
        let Err(stop) = self.run(&bot, &intake, &mut trouble, &shutdown).await;
        match stop {
            Stop::Shutdown => Ok(()),
            Stop::Fatal(error) => Err(error),
        }
    }

    /// Starts, then hands batch after batch to the core until the loop stops.
    async fn run(
        &self,
        bot: &Bot,
        intake: &Intake,
        trouble: &mut Trouble,
        shutdown: &CancellationToken,
    ) -> Result<Infallible, Stop> {
        let username = self.start_until_done(bot, trouble, shutdown).await?;
        let mut offset = self.offsets.load();
        tracing::info!(bot = %username, offset = ?offset, "Telegram gateway polling");
        loop {
            let updates = self.next_batch(bot, offset, trouble, shutdown).await?;
            let before = offset;
            let end = self
                .handle_batch(bot, &username, updates, intake, shutdown, &mut offset)
                .await;
            if offset != before
                && let Some(offset) = offset
            {
                self.save_offset(offset).await;
            }
            self.after_batch(end, offset, shutdown).await?;
        }
    }

    /// [`start`](Self::start), tried again after each failure until it succeeds.
    async fn start_until_done(
        &self,
        bot: &Bot,
        trouble: &mut Trouble,
        shutdown: &CancellationToken,
    ) -> Result<String, Stop> {
        loop {
            let started = tokio::select! {
                biased;
                () = shutdown.cancelled() => return Err(Stop::Shutdown),
                started = self.start(bot) => started,
            };
            match started {
                Ok(username) => return Ok(username),
                Err(failure) => self.wait_after(failure, trouble, shutdown).await?,
            }
        }
    }

    /// The next batch of updates from `offset` on, polled again after each
    /// failure until one comes (it may be empty).
    async fn next_batch(
        &self,
        bot: &Bot,
        offset: Option<i64>,
        trouble: &mut Trouble,
        shutdown: &CancellationToken,
    ) -> Result<Vec<Item>, Stop> {
        loop {
            if trouble.recheck_webhook {
                trouble.recheck_webhook = false;
                if let Err(failure) = self.remove_webhook(bot).await {
                    tracing::debug!(error = ?failure, "could not check for a webhook");
                }
            }
            let single = trouble.unreadable >= ISOLATE_AFTER;
            let params = GetUpdates {
                offset,
                limit: single.then_some(1),
                timeout: self.settings.poll_timeout_s,
                allowed_updates: &ALLOWED_UPDATES,
            };
            let polled = tokio::select! {
                biased;
                () = shutdown.cancelled() => return Err(Stop::Shutdown),
                polled = get_updates(bot, &params) => polled,
            };
            let failure = match polled {
                Ok(Answer::Updates(items)) => {
                    if trouble.conflict_warned {
                        tracing::info!("Telegram updates flow again");
                    }
                    trouble.backoff.reset();
                    trouble.conflict_warned = false;
                    // After one update alone, a whole batch again; one more
                    // unreadable answer goes straight back to one at a time.
                    trouble.unreadable = if single { ISOLATE_AFTER - 1 } else { 0 };
                    self.set_health(self.up());
                    return Ok(items);
                }
                Ok(Answer::Unreadable(reason)) => match (single, offset) {
                    (true, Some(offset)) => {
                        trouble.unreadable = 0;
                        // One update, unreadable: it is the one at `offset`.
                        return Ok(vec![Item::Unreadable {
                            update_id: Some(offset),
                            reason: format!("alone, its answer is still unreadable: {reason}"),
                        }]);
                    }
                    (true, None) => {
                        tracing::error!(
                            %reason,
                            "an unreadable Telegram update comes first, and no offset is known to skip it by"
                        );
                        Failure::Transient { reason }
                    }
                    (false, _) => {
                        trouble.unreadable += 1;
                        Failure::Transient {
                            reason: format!("unreadable getUpdates answer: {reason}"),
                        }
                    }
                },
                Ok(Answer::Refused(error)) | Err(error) => self.classify(&error),
            };
            self.wait_after(failure, trouble, shutdown).await?;
        }
    }

    /// Saves the offset past the last batch, which confirms the batch to
    /// Telegram at the next poll.
    async fn save_offset(&self, offset: i64) {
        if let Err(error) = self.offsets.save(offset).await {
            // Not fatal: at worst the updates come again and the core sees duplicates.
            tracing::warn!(offset, %error, "could not save the Telegram offset");
        }
    }

    /// What follows a batch that ended as `end`: the next poll (after a
    /// pause if the core is busy), or the end of the loop.
    async fn after_batch(&self, end: BatchEnd, offset: Option<i64>, shutdown: &CancellationToken) -> Result<(), Stop> {
        match end {
            BatchEnd::Done => Ok(()),
            BatchEnd::Busy => {
                tracing::debug!(offset = ?offset, "the core is busy; polling again shortly");
                if sleep_or_shutdown(self.settings.busy_backoff, shutdown).await {
                    Err(Stop::Shutdown)
                } else {
                    Ok(())
                }
            }
            BatchEnd::Shutdown => Err(Stop::Shutdown),
            BatchEnd::IntakeClosed => Err(if shutdown.is_cancelled() {
                Stop::Shutdown
            } else {
                Stop::Fatal(GatewayError::Closed)
            }),
        }
    }

    /// getMe, the webhook check and setMyCommands; the bot's username.
    async fn start(&self, bot: &Bot) -> Result<String, Failure> {
        let me = bot.get_me().await.map_err(|error| self.classify(&error))?;
        self.remove_webhook(bot).await?;
        let commands = crate::menu::COMMANDS.map(|(command, description)| BotCommand::new(command, description));
        if let Err(error) = bot.set_my_commands(commands).await {
            // The menu is a convenience; polling works without it.
            tracing::warn!(error = ?self.classify(&error), "could not set the bot's commands");
        }
        Ok(me.username().to_owned())
    }

    /// Deletes the bot's webhook if one is set: Telegram refuses getUpdates while it is.
    async fn remove_webhook(&self, bot: &Bot) -> Result<(), Failure> {
        let info = bot.get_webhook_info().await.map_err(|error| self.classify(&error))?;
        if let Some(url) = info.url {
            tracing::warn!(
                webhook_host = url.host_str().unwrap_or_default(),
                pending = info.pending_update_count,
                "a webhook was set for this bot; deleting it to poll instead"
            );
            bot.delete_webhook().await.map_err(|error| self.classify(&error))?;
        }
        Ok(())
    }

    /// Reports `failure` and waits as long as it asks for; a failure nothing
    /// cures by waiting ends the loop.
    async fn wait_after(
        &self,
        failure: Failure,
        trouble: &mut Trouble,
        shutdown: &CancellationToken,
    ) -> Result<(), Stop> {
        let delay = match failure {
            Failure::Unauthorized => {
                tracing::error!("{TOKEN_REFUSED}: check the bot token (from @BotFather)");
                self.set_health(Health::with(HealthState::Down, TOKEN_REFUSED));
                return Err(Stop::Fatal(GatewayError::Unauthorized {
                    reason: TOKEN_REFUSED.to_owned(),
                }));
            }
            Failure::Conflict { detail } => {
                if !trouble.conflict_warned {
                    trouble.conflict_warned = true;
                    tracing::warn!(
                        %detail,
                        "Telegram gives this bot's updates to someone else: another poller or a webhook"
                    );
                }
                trouble.recheck_webhook = true;
                self.set_health(Health::with(
                    HealthState::Degraded,
                    "conflict: another poller or a webhook takes this bot's updates",
                ));
                self.settings.conflict_backoff
            }
            Failure::RetryAfter(wait) => {
                tracing::info!(retry_after_s = wait.as_secs(), "Telegram asked us to slow down");
                self.set_health(Health::with(
                    HealthState::Degraded,
                    format!("rate limited by Telegram for {}s", wait.as_secs()),
                ));
                wait
            }
            Failure::Transient { reason } | Failure::Unreachable { reason } | Failure::Rejected { reason } => {
                let delay = trouble.backoff.next_delay();
                tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "Telegram poll failed");
                self.set_health(Health::with(HealthState::Degraded, reason));
                delay
            }
        };
        if sleep_or_shutdown(delay, shutdown).await {
            Err(Stop::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Hands each update of a batch to the core in order, moving `offset`
    /// past each one the core acknowledged or that was skipped.
    async fn handle_batch(
        &self,
        bot: &Bot,
        username: &str,
        items: Vec<Item>,
        intake: &Intake,
        shutdown: &CancellationToken,
        offset: &mut Option<i64>,
    ) -> BatchEnd {
        for item in items {
            let update = match item {
                Item::Update(update) => update,
                Item::Unreadable { update_id, reason } => {
                    tracing::warn!(update_id, %reason, "skipped a Telegram update that cannot be read");
                    self.count_unreadable();
                    *offset = match update_id {
                        Some(id) => Some(id + 1),
                        // Without a readable id it is presumably the one the offset names.
                        None => offset.map(|next| next + 1),
                    };
                    continue;
                }
            };
            let update_id = update.id.0;
            match self.normalize(&update, username) {
                Normalized::Skip { reason } => {
                    tracing::debug!(update_id, reason, "skipped a Telegram update");
                }
                Normalized::Inbound(inbound) => {
                    let callback = match &update.kind {
                        UpdateKind::CallbackQuery(query) => Some(query.id.clone()),
                        _ => None,
                    };
                    let end = self.submit(bot, *inbound, callback, intake, shutdown).await;
                    if let Some(end) = end {
                        return end;
                    }
                }
            }
            *offset = Some(i64::from(update_id) + 1);
        }
        BatchEnd::Done
    }

    /// [`normalize`]s one update. teloxide's types can panic on a shape they
    /// do not expect when read further (as its entity parsing did); such a
    /// panic skips the update like an unreadable one instead of ending the
    /// loop, which would meet the same update again after every restart.
    fn normalize(&self, update: &tg::Update, username: &str) -> Normalized {
        let settings = &self.settings;
        let normalized = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            normalize(
                update,
                username,
                settings.group_mode,
                &settings.bridged,
                settings.photo_max_bytes,
                unix_ms(),
            )
        }));
        normalized.unwrap_or_else(|_| {
            tracing::warn!(
                update_id = update.id.0,
                "skipped a Telegram update whose normalizer panicked"
            );
            self.count_unreadable();
            Normalized::skip("the normalizer gave up on its shape (it panicked)")
        })
    }

    /// Submits one message and acts on the core's answer. `None`: go on with
    /// the next update; `Some`: end the batch before this one.
    async fn submit(
        &self,
        bot: &Bot,
        inbound: Inbound,
        callback: Option<CallbackQueryId>,
        intake: &Intake,
        shutdown: &CancellationToken,
    ) -> Option<BatchEnd> {
        let chat = inbound.conversation.chat.as_str().parse::<i64>().map(tg::ChatId).ok();
        let sender = inbound.sender.id.clone();
        let message_id = telegram_message_id(&inbound.message_id);
        let acked = tokio::select! {
            biased;
            () = shutdown.cancelled() => return Some(BatchEnd::Shutdown),
            acked = intake.submit(inbound) => acked,
        };
        let Ok(ack) = acked else {
            return Some(BatchEnd::IntakeClosed);
        };
        if let Some(id) = callback {
            let mut answer = bot.answer_callback_query(id);
            if let Ack::Refused {
                reason: Refusal::NotApprover,
            } = ack
            {
                answer = answer.text(NOT_APPROVER).show_alert(true);
            }
            if let Err(error) = answer.await {
                // Best effort: a redelivered press was answered already.
                tracing::debug!(error = ?self.classify(&error), "answerCallbackQuery failed");
            }
        }
        match ack {
            Ack::Accepted | Ack::Duplicate => None,
            Ack::Busy => Some(BatchEnd::Busy),
            Ack::Refused {
                reason: Refusal::NotAllowed,
            } => {
                tracing::info!(user = %sender, "refused a message from someone not allowed");
                if let Some(chat) = chat
                    && self.refused.should_tell(&sender)
                {
                    self.tell(bot, chat, &self.settings.refusal, None).await;
                }
                None
            }
            Ack::Refused {
                reason: Refusal::NotApprover,
            } => {
                tracing::info!(user = %sender, "a button press by someone who may not approve");
                None
            }
            Ack::Refused {
                reason: Refusal::Pairing,
            } => {
                tracing::info!(user = %sender, "someone not allowed was answered with how to pair");
                None
            }
            Ack::Refused {
                reason: Refusal::TooLarge,
            } => {
                if let Some(chat) = chat {
                    self.tell(bot, chat, &self.settings.too_long, message_id).await;
                }
                None
            }
        }
    }

    /// Sends a notice of the gateway's own; a failure is only logged.
    async fn tell(&self, bot: &Bot, chat: tg::ChatId, text: &str, reply_to: Option<tg::MessageId>) {
        let mut request = bot.send_message(chat, text);
        if let Some(reply_to) = reply_to {
            request = request.reply_parameters(ReplyParameters::new(reply_to).allow_sending_without_reply());
        }
        if let Err(error) = request.await {
            tracing::warn!(chat = chat.0, error = ?self.classify(&error), "could not send a notice");
        }
    }
}
