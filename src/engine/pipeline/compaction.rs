//! Compaction: a long conversation stays within `memory.context_tokens`.
//!
//! What the model sees of the earlier conversation is its running summary
//! and the recent turns that fit after it. When the turns would not fit (or
//! fill all of `pipeline.history_turns`), the oldest are folded into the
//! summary first: the model is asked, through the cascade, to merge the old
//! summary and those turns into a new one. The turns stay in the history
//! (`search_history` still finds them); the summary and the mark of the last
//! turn it covers are committed with the turn that folded them.
//!
//! Tokens are estimated, not counted: characters / 4, which is close for
//! English and errs large for most other text; no tokenizer is needed.
//!
//! The summary has a bound of its own, whatever the model writes: a quarter
//! of `memory.context_tokens` (what the fold asks for), keeping its newest
//! part. Without it, a model that writes long (or repeats what it was
//! given) makes every summary longer than the last, until every turn folds
//! and the store keeps ever larger records. A quarter, not half: a fold
//! keeps the recent turns within half, so a quarter of the budget in new
//! turns comes between two folds even when the summary is at its bound.

use std::sync::Arc;

use jiff::Timestamp;

use super::cascade::Context;
use super::{Pipeline, SummaryChange, TurnOutput, TurnRecord};
use crate::model::llm::{ChatMessage, Role, ToolSpec};

/// What heads the summary in the model's context.
pub const SUMMARY_NOTE: &str = "Summary of the earlier conversation:";

/// The instructions for folding turns into the summary.
const PROMPT: &str = "You keep the running summary of a conversation between a person and their assistant. \
You get the summary so far and the turns that follow it. Write the new summary: merge the turns into it, \
in the same language as the conversation. Keep every fact about the person and their world, names, \
numbers, dates and times, decisions taken, promises made and tasks still open; drop greetings, small \
talk and anything said twice. Write plain sentences or short bullet points, no preamble; answer with \
the summary alone.";

/// Longest text of one tool result shown to the summariser, in characters.
const TOOL_RESULT_CHARS: usize = 500;

/// The conversation's past that a turn is given: its running summary and
/// the turns after it, oldest first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Earlier<'a> {
    pub summary: Option<&'a str>,
    pub turns: &'a [TurnRecord],
}

impl<'a> Earlier<'a> {
    /// Turns with no summary (compaction off).
    pub fn turns(turns: &'a [TurnRecord]) -> Self {
        Self { summary: None, turns }
    }
}

/// A new running summary, made by folding the oldest turns in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    pub text: String,
    /// How many of the turns given to the turn (the oldest) it covers.
    pub turns: usize,
}

impl Pipeline {
    /// What the model is shown of the `earlier` conversation: its summary
    /// and the recent turns that fit the budget, after folding the oldest
    /// turns into the summary (asking `preferred` first) when they would not
    /// fit. The fold and its tokens go into `output`; a fold that fails is
    /// logged, and the turn goes on with what fits of the old summary and
    /// the turns.
    pub(super) async fn compact<'a>(
        &self,
        earlier: Earlier<'a>,
        preferred: Option<&str>,
        output: &mut TurnOutput,
    ) -> (Option<String>, &'a [TurnRecord]) {
        if !self.compacting() {
            return (None, earlier.turns);
        }
        let budget = self.memory.context_tokens;
        // A summary kept before the bound, or under a larger budget, is held
        // to it too.
        let (mut summary, mut turns) = (
            earlier.summary.map(|text| bounded(text, budget).to_owned()),
            earlier.turns,
        );
        let fold = to_fold(summary.as_deref(), turns, budget, self.settings.history_turns);
        if fold > 0 {
            let request = request(summary.as_deref(), &turns[..fold], budget);
            match self.cascade.answer(&request, &no_tools(), preferred, None).await {
                Ok(answered) => {
                    output.cost.count(&answered.response, &answered.provider);
                    match answered.response.content.filter(|text| !text.trim().is_empty()) {
                        Some(text) if answered.response.tool_calls.is_empty() => {
                            let written = text.trim();
                            let text = bounded(written, budget).to_owned();
                            if text.len() < written.len() {
                                tracing::debug!(
                                    budget,
                                    "the model's summary is longer than a quarter of memory.context_tokens; its oldest part is cut"
                                );
                            }
                            tracing::debug!(
                                turns = fold,
                                tokens = tokens(&text),
                                "earlier turns folded into the summary"
                            );
                            output.summary = Some(SummaryChange::Folded(Folded {
                                text: text.clone(),
                                turns: fold,
                            }));
                            summary = Some(text);
                            turns = &turns[fold..];
                        }
                        _ => tracing::warn!(
                            provider = answered.provider,
                            "the model gave no summary; the turn goes on without folding"
                        ),
                    }
                }
                Err(exhausted) => {
                    tracing::warn!(error = %exhausted, "cannot fold earlier turns into the summary; the turn goes on without")
                }
            }
        }
        let first = fit(summary.as_deref(), turns, budget);
        (summary, &turns[first..])
    }
}

impl Pipeline {
    /// What of the `earlier` conversation goes over to another of the
    /// person's chats on a hand-off: the summary held to its bound, and the
    /// newest turns that fit in half the budget, so that the receiving
    /// conversation has room for its own (every turn when nothing is
    /// compacted).
    pub fn carried<'a>(&self, earlier: Earlier<'a>) -> (Option<&'a str>, &'a [TurnRecord]) {
        if !self.compacting() {
            return (earlier.summary, earlier.turns);
        }
        let budget = self.memory.context_tokens;
        let summary = earlier.summary.map(|text| bounded(text, budget));
        let first = fit(None, earlier.turns, budget / 2);
        (summary, &earlier.turns[first..])
    }
}

/// The most a summary may hold within `budget`: a quarter of it, in
/// characters (four to a token).
pub fn summary_chars(budget: usize) -> usize {
    (budget / 4).saturating_mul(4)
}

/// `summary` held to its bound within `budget` ([`summary_chars`]): its
/// newest part, from the first word that starts within the bound, since the
/// model merges new turns in at the end.
pub fn bounded(summary: &str, budget: usize) -> &str {
    let most = summary_chars(budget);
    // No more bytes than the bound allows characters: within it, uncounted
    // (every turn holds its summary to the bound).
    if summary.len() <= most {
        return summary;
    }
    let Some((cut, _)) = summary
        .char_indices()
        .rev()
        .nth(most.saturating_sub(1))
        .filter(|(at, _)| *at > 0)
    else {
        return summary;
    };
    let kept = &summary[cut..];
    // Not from the middle of a word, when a word boundary is near.
    match kept.find(char::is_whitespace) {
        Some(space) if space < kept.len() / 4 => kept[space..].trim_start(),
        _ => kept,
    }
}

/// The estimated tokens of `text`: characters / 4, rounded up.
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The estimated tokens of a turn: its messages' text and tool calls.
pub fn turn_tokens(turn: &TurnRecord) -> usize {
    turn.messages
        .iter()
        .map(|message| {
            tokens(&message.content)
                + message
                    .tool_calls
                    .iter()
                    .map(|call| tokens(&call.name) + tokens(&call.arguments))
                    .sum::<usize>()
        })
        .sum()
}

/// How many of the oldest `turns` to fold into the summary before this
/// turn: none while the summary and the turns fit in `budget` and the turns
/// do not fill `max_turns`; otherwise enough that the newest turns kept fit
/// in half the budget and half of `max_turns`, so that the next fold is a
/// while off.
pub fn to_fold(summary: Option<&str>, turns: &[TurnRecord], budget: usize, max_turns: usize) -> usize {
    let sizes: Vec<usize> = turns.iter().map(turn_tokens).collect();
    let total = summary.map_or(0, tokens) + sizes.iter().sum::<usize>();
    if turns.is_empty() || (total <= budget && turns.len() < max_turns) {
        return 0;
    }
    let (room, most) = (budget / 2, max_turns / 2);
    let mut kept = (0, 0);
    for size in sizes.iter().rev() {
        if kept.0 + size > room || kept.1 + 1 > most {
            break;
        }
        kept = (kept.0 + size, kept.1 + 1);
    }
    (turns.len() - kept.1).max(1)
}

/// Which of `turns` go into the context after `summary` (already held to its
/// bound) within `budget`: the index of the first of the newest that fit.
pub fn fit(summary: Option<&str>, turns: &[TurnRecord], budget: usize) -> usize {
    let mut room = budget.saturating_sub(summary.map_or(0, tokens));
    let mut first = turns.len();
    for turn in turns.iter().rev() {
        let size = turn_tokens(turn);
        if size > room {
            break;
        }
        room -= size;
        first -= 1;
    }
    first
}

/// The request that folds `turns` into `summary`, asking for a summary of
/// at most a quarter of `budget` tokens (about three words in four tokens,
/// [`summary_chars`]), so that recent turns fit beside it.
pub fn request(summary: Option<&str>, turns: &[TurnRecord], budget: usize) -> Context {
    let mut text = format!(
        "The summary so far:\n{}\n\nThe turns that follow it:\n",
        summary.unwrap_or("(none yet)")
    );
    for turn in turns {
        text.push_str(&transcript(turn));
        text.push('\n');
    }
    let words = budget / 4 * 3 / 4;
    Context {
        system: format!("{PROMPT} Keep it under {words} words: when it would be longer, shorten what matters least."),
        earlier: Vec::new(),
        turn: vec![ChatMessage::user(text)],
    }
}

/// No tools: the summariser only writes.
pub fn no_tools() -> Arc<[ToolSpec]> {
    Arc::from(Vec::new())
}

/// What `/summary` answers.
pub fn shown(summary: Option<&str>, compacting: bool) -> String {
    match summary {
        _ if !compacting => "There is no summary here: compaction is off (`memory.context_tokens = 0`).".to_owned(),
        Some(text) => format!("{SUMMARY_NOTE}\n{text}"),
        None => "There is no summary yet: all of this conversation still fits in what I am shown.".to_owned(),
    }
}

/// One turn as the summariser reads it: dated, who said what, tool results cut short.
fn transcript(turn: &TurnRecord) -> String {
    let date = turn
        .at_ms
        .and_then(|at| Timestamp::from_millisecond(at as i64).ok())
        .map(|at| at.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "undated".into());
    let mut text = format!("[{date}]\n");
    for message in &turn.messages {
        let (who, said) = match message.role {
            Role::User => ("person", message.content.as_str()),
            Role::Assistant => ("assistant", message.content.as_str()),
            Role::Tool => ("tool result", clip(&message.content, TOOL_RESULT_CHARS)),
            Role::System => continue,
        };
        for call in &message.tool_calls {
            text.push_str(&format!("assistant called {} {}\n", call.name, call.arguments));
        }
        if !said.is_empty() {
            text.push_str(&format!("{who}: {said}\n"));
        }
    }
    text
}

/// The first `chars` characters of `text`.
fn clip(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn of `chars` characters said by the person.
    fn turn(chars: usize) -> TurnRecord {
        TurnRecord {
            messages: vec![ChatMessage::user("x".repeat(chars))],
            at_ms: None,
            by: None,
        }
    }

    #[test]
    fn tokens_are_characters_by_four_rounded_up() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("abcd"), 1);
        assert_eq!(tokens("abcde"), 2);
        assert_eq!(tokens("ééééé"), 2, "characters, not bytes");
    }

    #[test]
    fn nothing_is_folded_while_everything_fits() {
        let turns = [turn(40), turn(40)];
        assert_eq!(to_fold(Some("abcd"), &turns, 21, 20), 0);
        assert_eq!(to_fold(None, &[], 1, 20), 0);
    }

    #[test]
    fn over_the_budget_the_oldest_turns_go_until_the_rest_fit_in_half() {
        // Ten turns of 10 tokens: 100 > 60; half is 30, so three are kept.
        let turns: Vec<_> = (0..10).map(|_| turn(40)).collect();
        assert_eq!(to_fold(None, &turns, 60, 20), 7);
        // A summary counts too.
        assert_eq!(to_fold(Some(&"y".repeat(40)), &turns[..5], 60, 20), 0);
        assert_eq!(to_fold(Some(&"y".repeat(40)), &turns[..5], 50, 20), 3);
        // One turn larger than the budget is folded whole.
        assert_eq!(to_fold(None, &[turn(400)], 60, 20), 1);
    }

    #[test]
    fn a_full_window_folds_half_of_it_even_within_the_budget() {
        let turns: Vec<_> = (0..4).map(|_| turn(4)).collect();
        assert_eq!(to_fold(None, &turns, 1000, 4), 2);
        assert_eq!(to_fold(None, &turns[..3], 1000, 4), 0);
    }

    #[test]
    fn what_fits_is_the_summary_and_the_newest_turns_after_it() {
        let turns = [turn(400), turn(40), turn(40)];
        assert_eq!(fit(Some("abcd"), &turns, 21), 1);
        assert_eq!(fit(None, &turns, 19), 2);
        assert_eq!(
            fit(Some(&"s".repeat(40)), &turns, 10),
            3,
            "no room left after the summary"
        );
    }

    #[test]
    fn a_summary_is_held_to_a_quarter_of_the_budget_keeping_its_newest_words() {
        assert_eq!(summary_chars(8000), 8_000);
        assert_eq!(bounded("short and sweet", 8000), "short and sweet");
        // A budget of 20 tokens leaves 5 to the summary: 20 characters.
        let long = "oldest words first then the newest words last";
        assert_eq!(
            bounded(long, 20),
            "newest words last",
            "cut after the word it starts in"
        );
        assert!(tokens(bounded(long, 20)) <= 5);
        let unbroken = "x".repeat(100);
        assert_eq!(
            bounded(&unbroken, 20),
            "x".repeat(20),
            "no word boundary: cut at a character"
        );
        let wide = "é".repeat(30);
        assert_eq!(bounded(&wide, 20).chars().count(), 20, "characters, not bytes");
    }

    #[test]
    fn the_request_carries_the_old_summary_and_the_turns_in_order() {
        let turns = [
            TurnRecord {
                messages: vec![
                    ChatMessage::user("my locker code is 4711"),
                    ChatMessage::assistant("noted"),
                ],
                at_ms: Some(1_740_830_400_000),
                by: None,
            },
            turn(3),
        ];
        let context = request(Some("likes tea"), &turns, 8000);
        assert!(context.system.contains("decisions"), "{}", context.system);
        assert!(context.system.contains("under 1500 words"), "{}", context.system);
        let text = &context.turn[0].content;
        assert!(text.starts_with("The summary so far:\nlikes tea\n"), "{text}");
        assert!(
            text.contains("[2025-03-01 12:00 UTC]\nperson: my locker code is 4711\nassistant: noted\n"),
            "{text}"
        );
        assert!(text.ends_with("[undated]\nperson: xxx\n\n"), "{text}");
    }
}
