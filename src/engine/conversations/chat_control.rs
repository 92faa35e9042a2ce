//! What the in-chat controls need from the worker: storing a conversation's
//! change to its own settings (`/model NAME`, `/new`), adding the tokens of
//! a turn that did not commit to the usage records (a committed turn's go
//! in with its commit), and rendering `/usage`.

use std::sync::Arc;

use passepartout_gateway::ConversationKey;

use super::Conversations;
use crate::engine::pipeline::commands::ChatChange;
use crate::engine::pipeline::usage_report::{self, UsagePeriods, UsageSum};
use crate::store::{ByProvider, ChatSettings, StoreError};

/// Stores `change` for `key`, before the turn that answers it commits, and
/// returns the settings now stored, for the worker's copy.
pub(super) fn apply(
    cx: &Conversations,
    key: &ConversationKey,
    change: &ChatChange,
) -> Result<ChatSettings, StoreError> {
    match change {
        ChatChange::Pin(name) => cx.store.update_chat_settings(key, |s| s.pinned_model = name.clone()),
        ChatChange::FreshStart => {
            let mark = cx.store.history_mark()?;
            cx.store.update_chat_settings(key, |s| s.fresh_after = Some(mark))
        }
    }
}

/// Adds the tokens of a turn whose commit failed to today's record: they
/// were used all the same. A failure is logged: only the estimate is low.
pub(super) fn record_usage(cx: &Conversations, key: &ConversationKey, used: &ByProvider) {
    let day = usage_report::day_of(cx.clock.now_ms());
    if let Err(error) = cx.store.add_usage(key, day, used) {
        tracing::error!(conversation = %key, %error, "cannot record token usage");
    }
}

/// Today's and this month's usage of `conversation` (of all when `None`).
pub(super) fn periods(cx: &Conversations, conversation: Option<&ConversationKey>) -> Result<UsagePeriods, StoreError> {
    let now = cx.clock.now_ms();
    let (today, first) = (usage_report::day_of(now), usage_report::first_day_of_month(now));
    let pipeline = cx.pipeline();
    let providers = pipeline.providers();
    Ok(UsagePeriods {
        today: UsageSum::of(&cx.store.usage(conversation, today, today)?, providers),
        month: UsageSum::of(&cx.store.usage(conversation, first, today)?, providers),
    })
}

/// The `/usage` reply for `key`.
pub(super) fn usage_text(cx: &Arc<Conversations>, key: &ConversationKey) -> String {
    match (periods(cx, Some(key)), periods(cx, None)) {
        (Ok(here), Ok(total)) => usage_report::render(&here, &total),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(conversation = %key, %error, "cannot read token usage");
            format!("I could not read the usage records: {error}")
        }
    }
}

/// `/usage` for someone who may not see the totals: this conversation's own.
pub(super) fn own_usage_text(cx: &Arc<Conversations>, key: &ConversationKey) -> String {
    match periods(cx, Some(key)) {
        Ok(here) => usage_report::render_here(&here),
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot read token usage");
            format!("I could not read the usage records: {error}")
        }
    }
}
