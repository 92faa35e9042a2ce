//! `[memory]`: how much the assistant keeps per person, how much of it the
//! model sees in each turn, how much of a conversation's history goes into
//! the context before older turns are folded into a running summary, how
//! long conversation history and the token usage records are kept, and in
//! which groups what a person keeps is read at all.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_MAX_FACTS: usize = 500;
pub const DEFAULT_MAX_FACT_CHARS: usize = 500;
pub const DEFAULT_CONTEXT_FACTS: usize = 8;
/// A year: `search_history` can still find last spring's conversation,
/// and a chatty conversation (a few thousand turns a year, a few KB each)
/// stays in the tens of megabytes rather than growing for ever.
pub const DEFAULT_HISTORY_KEEP_DAYS: u64 = 365;
/// Tokens of earlier conversation (running summary and recent turns) the
/// model sees each turn: room for a dozen ordinary exchanges beside the
/// system prompt and tools, well inside any current model's window.
pub const DEFAULT_CONTEXT_TOKENS: usize = 8_000;
/// The smallest `context_tokens` other than 0: below it the summary alone
/// would not fit.
pub const MIN_CONTEXT_TOKENS: usize = 256;
/// A little over a year: `/usage` shows this month, and the same month a
/// year ago is still there to compare.
pub const DEFAULT_USAGE_KEEP_DAYS: u64 = 400;
/// The most days a `keep_days` setting may say: a hundred years; more is a
/// typo (and would overflow as milliseconds). 0 is the way to keep for good.
pub const MAX_KEEP_DAYS: u64 = 36_500;

/// `[memory]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Most facts kept per person; `remember` refuses beyond it.
    pub max_facts: usize,
    /// Longest fact, in characters.
    pub max_fact_chars: usize,
    /// Facts put into the model's context each turn, the most related to the
    /// message first; 0 keeps memory out of the context (the model can still
    /// `recall`).
    pub context_facts: usize,
    /// Conversation history turns older than this many days are deleted
    /// (the facts stay); 0 keeps them for good.
    pub history_keep_days: u64,
    /// Tokens of earlier conversation given to the model each turn: the
    /// running summary and the recent turns that fit, estimated cheaply as
    /// characters / 4. When the turns would not fit, the oldest are folded
    /// into the summary by the model (they stay in the history). 0 turns
    /// compaction off: the last `pipeline.history_turns` turns, no summary.
    pub context_tokens: usize,
    /// Daily token usage records (`/usage`) older than this many days are
    /// deleted; 0 keeps them for good.
    pub usage_keep_days: u64,
    /// Group chats, as `gateway:chat` (`telegram:-100…`, `signal:group:…`),
    /// whose turns read what the person speaking asked the assistant to
    /// remember. In every other group nothing remembered is read, since
    /// everyone there (and, across a bridge, on the other side) reads the
    /// answer. Empty by default.
    pub facts_in_groups: Vec<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_facts: DEFAULT_MAX_FACTS,
            max_fact_chars: DEFAULT_MAX_FACT_CHARS,
            context_facts: DEFAULT_CONTEXT_FACTS,
            history_keep_days: DEFAULT_HISTORY_KEEP_DAYS,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            usage_keep_days: DEFAULT_USAGE_KEEP_DAYS,
            facts_in_groups: Vec::new(),
        }
    }
}

impl MemoryConfig {
    /// Notes what is wrong with `[memory]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.max_facts > 0, "memory.max_facts must be at least 1");
        problems.check(self.max_fact_chars >= 16, "memory.max_fact_chars must be at least 16");
        problems.check(
            self.history_keep_days <= MAX_KEEP_DAYS,
            format!("memory.history_keep_days must be at most {MAX_KEEP_DAYS} (0 keeps history for good)"),
        );
        problems.check(
            self.usage_keep_days <= MAX_KEEP_DAYS,
            format!("memory.usage_keep_days must be at most {MAX_KEEP_DAYS} (0 keeps usage records for good)"),
        );
        for chat in &self.facts_in_groups {
            let named = chat.split_once(':').is_some_and(|(gateway, chat)| {
                passepartout_gateway::GatewayId::new(gateway).is_ok() && passepartout_gateway::ChatId::new(chat).is_ok()
            });
            problems.check(
                named,
                format!("memory.facts_in_groups: \"{chat}\" is not gateway:chat (e.g. telegram:-1001234567890)"),
            );
        }
        problems.check(
            self.context_tokens == 0 || self.context_tokens >= MIN_CONTEXT_TOKENS,
            format!("memory.context_tokens must be 0 (no compaction) or at least {MIN_CONTEXT_TOKENS}"),
        );
    }
}
