//! `search_history`: the model looks up what was said earlier, beyond the
//! recent turns it is shown, by words (BM25 over [`crate::foundation::ranking`]'s terms)
//! and dates. By default it searches the calling conversation; with
//! `scope: "all"` also the other conversations of the same person on the
//! same gateway, and on the channels they linked when the search runs in
//! one of their private conversations ([`crate::people::linking`]) — there, only
//! the turns that person started (each turn records its sender), so another
//! person's words are never found, not even in a group both are in.

use async_trait::async_trait;
use jiff::Timestamp;
use jiff::civil::Date;
use passepartout_gateway::{ConversationKey, UserId};
use serde::Deserialize;
use serde_json::json;

use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::foundation::ranking::Bm25;
use crate::model::llm::{ChatMessage, Role, ToolSpec};

/// Turns returned when the model does not say.
const DEFAULT_LIMIT: usize = 5;
/// Most turns one search returns.
const MAX_LIMIT: usize = 20;
/// Longest text shown of one message, in characters.
const MESSAGE_CHARS: usize = 600;
/// Longest answer, in characters: a search must not flood the context.
const ANSWER_CHARS: usize = 6_000;

/// A history record as the conversation worker keeps it: the turn's
/// messages, when it was committed and who started it. Read here for its
/// words, date and sender only.
#[derive(Deserialize)]
struct KeptTurn {
    messages: Vec<ChatMessage>,
    #[serde(default)]
    at_ms: Option<u64>,
    #[serde(default)]
    by: Option<UserId>,
}

/// A turn found, and the conversation it is in when that is not the caller's.
struct Found {
    turn: KeptTurn,
    elsewhere: Option<ConversationKey>,
}

/// Which conversations a search reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Scope {
    /// The calling conversation.
    #[default]
    Conversation,
    /// The calling conversation, and the turns the caller started in their
    /// other conversations on the same gateway and on their linked channels.
    All,
}

/// `search_history {query, since?, until?, limit?, scope?}`.
pub struct SearchHistory;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    #[serde(default)]
    query: String,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    scope: Scope,
}

#[async_trait]
impl Tool for SearchHistory {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_history".into(),
            description: "Search this conversation's earlier turns (older than those you see) by words and dates, or with scope \"all\" also what this person said in their other conversations with you (on every channel they linked); the best matches come first, each with its date (UTC).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for; empty lists the newest turns in the date range."},
                    "since": {"type": "string", "description": "First day to search, YYYY-MM-DD (UTC)."},
                    "until": {"type": "string", "description": "Last day to search, YYYY-MM-DD (UTC), included."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most turns to return (default 5)."},
                    "scope": {"type": "string", "enum": ["conversation", "all"], "description": "conversation (the default): this conversation only; all: also this person's other conversations."}
                },
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let args: SearchArgs = parse_arguments(arguments)?;
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ToolError::InvalidArguments(format!("limit must be 1 to {MAX_LIMIT}")));
        }
        let since = args.since.as_deref().map(|day| day_start(day, "since")).transpose()?;
        let until = args.until.as_deref().map(|day| day_start(day, "until")).transpose()?;
        // `until` names a day to include: the range ends where the next day starts.
        let until = until.map(|start| start + 24 * 3_600_000);
        if let (Some(since), Some(until)) = (since, until)
            && since >= until
        {
            return Err(ToolError::InvalidArguments("since must not be after until".into()));
        }
        let turns = read(context, args.scope).await?;
        let dated = since.is_some() || until.is_some();
        let turns: Vec<Found> = turns
            .into_iter()
            .filter(|found| {
                !dated
                    || found
                        .turn
                        .at_ms
                        .is_some_and(|at| since.is_none_or(|s| at >= s) && until.is_none_or(|u| at < u))
            })
            .collect();
        if turns.is_empty() {
            return Ok("no earlier turns match".into());
        }
        let texts: Vec<String> = turns.iter().map(|found| said(&found.turn.messages)).collect();
        let picked: Vec<usize> = if args.query.trim().is_empty() {
            (0..turns.len()).rev().take(limit).collect()
        } else {
            best_matches(&texts, &args.query, limit)
        };
        if picked.is_empty() {
            return Ok("no earlier turns match".into());
        }
        Ok(answer(&turns, &picked, &context.conversation.gateway))
    }
}

/// The turns `scope` lets the caller of `context` search, oldest first
/// within each conversation. A record that does not read is skipped rather
/// than failing the search.
async fn read(context: &ToolContext, scope: Scope) -> Result<Vec<Found>, ToolError> {
    let store = context.memory.store().clone();
    let here = context.conversation.clone();
    // The caller, and who they are on the channels they linked.
    let mut accounts = vec![(here.gateway.clone(), context.sender.clone())];
    accounts.extend(context.memory.linked().iter().cloned());
    let mut gateways: Vec<_> = accounts.iter().map(|(gateway, _)| gateway.clone()).collect();
    gateways.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    gateways.dedup();
    let read = tokio::task::spawn_blocking(move || match scope {
        Scope::Conversation => store
            .all_turns(&here)
            .map(|records| records.into_iter().map(|record| (here.clone(), record)).collect()),
        Scope::All => gateways.iter().try_fold(Vec::new(), |mut all, gateway| {
            all.extend(store.turns_on(gateway)?);
            Ok(all)
        }),
    });
    let records: Vec<_> = read
        .await
        .map_err(|error| ToolError::Failed(format!("history search failed: {error}")))?
        .map_err(|error: crate::store::StoreError| ToolError::Failed(format!("history is unavailable: {error}")))?;
    let here = &context.conversation;
    Ok(records
        .into_iter()
        .filter_map(|(conversation, record)| {
            let turn: KeptTurn = serde_json::from_slice(&record).ok()?;
            if conversation == *here {
                return Some(Found { turn, elsewhere: None });
            }
            // Elsewhere, only what this person started.
            let theirs = accounts
                .iter()
                .any(|(gateway, user)| *gateway == conversation.gateway && turn.by.as_ref() == Some(user));
            theirs.then_some(Found {
                turn,
                elsewhere: Some(conversation),
            })
        })
        .collect())
}

/// The start of `day` (YYYY-MM-DD, UTC) in milliseconds since the epoch.
fn day_start(day: &str, name: &str) -> Result<u64, ToolError> {
    let date: Date = day
        .trim()
        .parse()
        .map_err(|_| ToolError::InvalidArguments(format!("{name} must be a date like 2025-03-14, not {day:?}")))?;
    let at = date
        .to_zoned(jiff::tz::TimeZone::UTC)
        .map_err(|error| ToolError::InvalidArguments(format!("{name}: {error}")))?
        .timestamp()
        .as_millisecond();
    Ok(u64::try_from(at).unwrap_or(0))
}

/// The indexes of the `texts` that match `query`, best first (of two
/// equally good, the later text), at most `limit`: how `search_history`
/// ranks turns, and the dashboard's search with it.
pub fn best_matches(texts: &[String], query: &str, limit: usize) -> Vec<usize> {
    let scores = Bm25::for_query(texts.iter().map(String::as_str), query).scores(query);
    let mut ranked: Vec<(usize, f64)> = scores.into_iter().enumerate().filter(|(_, s)| *s > 0.0).collect();
    ranked.sort_by(|(a, a_score), (b, b_score)| b_score.total_cmp(a_score).then(b.cmp(a)));
    ranked.into_iter().take(limit).map(|(turn, _)| turn).collect()
}

/// What the person and the assistant said in a turn's `messages` (tool
/// traffic left out): the text a search ranks.
pub fn said(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty())
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The picked turns, best first, each under its date (and its
/// conversation, when not the caller's, or its channel, when on another), within [`ANSWER_CHARS`].
fn answer(turns: &[Found], picked: &[usize], here: &passepartout_gateway::GatewayId) -> String {
    let mut out = String::new();
    for (shown, &index) in picked.iter().enumerate() {
        let Found { turn, elsewhere } = &turns[index];
        let date = turn
            .at_ms
            .and_then(|at| Timestamp::from_millisecond(at as i64).ok())
            .map(|at| at.strftime("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_else(|| "undated".into());
        let mut block = match elsewhere {
            Some(conversation) if conversation.gateway == *here => {
                format!("[{date}, in conversation {}]\n", conversation.chat.as_str())
            }
            Some(conversation) => format!("[{date}, on {}]\n", conversation.gateway),
            None => format!("[{date}]\n"),
        };
        for message in turn
            .messages
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty())
        {
            let who = if message.role == Role::User {
                "person"
            } else {
                "assistant"
            };
            block.push_str(&format!("{who}: {}\n", clip(&message.content, MESSAGE_CHARS)));
        }
        if out.chars().count() + block.chars().count() > ANSWER_CHARS {
            out.push_str(&format!("({} more matching turns not shown)\n", picked.len() - shown));
            break;
        }
        out.push_str(&block);
        out.push('\n');
    }
    out.trim_end().to_owned()
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
