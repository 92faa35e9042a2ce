//! The conversations on the dashboard: every one with kept history and its
//! last activity, one's whole history with its running summary, and a
//! search over all of them ranked as the `search_history` tool ranks.
//! Every text is redacted of the configured secrets before it is answered
//! or searched: a tool's output kept in the history may quote one (`cat`
//! of a token file), and a page reloaded must not show what the stream hid.

use passepartout_admin::Unreadable;
use passepartout_gateway::ConversationKey;
use serde_json::{Value, json};

use crate::daemon::admin::redacted::{Redact, redacted};
use crate::engine::pipeline::TurnRecord;
use crate::model::llm::{ChatMessage, Role};
use crate::safety::tools::best_matches;
use crate::store::Store;

/// Most results a search answers.
const SEARCH_RESULTS: usize = 20;
/// Longest text of a result, in characters.
const RESULT_CHARS: usize = 400;

/// Every conversation with kept history, the latest activity first.
pub(super) fn listing(store: &Store) -> Result<Value, Unreadable> {
    let names = crate::gateways::web::keys::names(store).map_err(Unreadable::because)?;
    let mut listed: Vec<Value> = store
        .conversations()
        .map_err(Unreadable::because)?
        .into_iter()
        .map(|(key, turns, newest)| {
            let last_ms = serde_json::from_slice::<TurnRecord>(&newest)
                .ok()
                .and_then(|record| record.at_ms);
            // An API key's conversations by the key's name, not its id.
            let shown = crate::gateways::web::keys::shown(&key, &names);
            json!({ "gateway": key.gateway, "chat": key.chat, "shown": shown, "turns": turns, "last_ms": last_ms })
        })
        .collect();
    // Undated (older) records last; of two alike, the key order.
    listed.sort_by_key(|c| std::cmp::Reverse(c["last_ms"].as_u64()));
    Ok(json!({ "conversations": listed }))
}

/// `conversation`'s history, oldest first, with its running summary.
/// A record that does not read is skipped.
pub(super) fn history(store: &Store, conversation: &ConversationKey, redact: &Redact) -> Result<Value, Unreadable> {
    let turns: Vec<Value> = store
        .all_turns(conversation)
        .map_err(Unreadable::because)?
        .iter()
        .filter_map(|record| serde_json::from_slice::<TurnRecord>(record).ok())
        .map(|record| {
            let mut messages = serde_json::to_value(&record.messages).unwrap_or_default();
            redacted(&mut messages, redact);
            json!({ "at_ms": record.at_ms, "messages": messages })
        })
        .collect();
    let summary = store.summary(conversation).map_err(Unreadable::because)?;
    Ok(json!({
        "turns": turns,
        "summary": summary.map(|summary| redact(&summary.text)),
    }))
}

/// How many turns `conversation` keeps and when the newest was: what
/// changes when a turn is added, read without reading the history.
pub(super) fn latest(store: &Store, conversation: &ConversationKey) -> Result<Value, Unreadable> {
    let turns = store.history_len(conversation);
    let newest: Vec<TurnRecord> = store.recent_turns(conversation, 1).map_err(Unreadable::because)?;
    let last_ms = newest.first().and_then(|record| record.at_ms);
    Ok(json!({ "turns": turns, "last_ms": last_ms }))
}

/// The turns of every conversation that best match `query`, best first.
pub(super) fn search(store: &Store, query: &str, redact: &Redact) -> Result<Value, Unreadable> {
    if query.trim().is_empty() {
        return Ok(json!({ "results": [] }));
    }
    let mut found: Vec<(ConversationKey, TurnRecord)> = Vec::new();
    for (conversation, _, _) in store.conversations().map_err(Unreadable::because)? {
        for record in store.all_turns(&conversation).map_err(Unreadable::because)? {
            if let Ok(turn) = serde_json::from_slice::<TurnRecord>(&record) {
                found.push((conversation.clone(), turn));
            }
        }
    }
    // Redacted before ranking, so that a search for a secret finds nothing.
    let texts: Vec<String> = found.iter().map(|(_, turn)| redact(&shown(&turn.messages))).collect();
    let results: Vec<Value> = best_matches(&texts, query, SEARCH_RESULTS)
        .into_iter()
        .map(|index| {
            let (key, turn) = &found[index];
            json!({
                "gateway": key.gateway,
                "chat": key.chat,
                "at_ms": turn.at_ms,
                "text": clip(&texts[index], RESULT_CHARS),
            })
        })
        .collect();
    Ok(json!({ "results": results }))
}

/// What people and the assistant said in a turn, as people are shown it:
/// the daemon's notes to the model by what they show, or not at all.
fn shown(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant))
        .filter_map(ChatMessage::shown)
        .collect::<Vec<_>>()
        .join("\n")
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
