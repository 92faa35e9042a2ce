//! The provider cascade: the configured models, tried in order until one
//! answers. Every decision is taken on the [`LlmError`] variant, never on its
//! text:
//! - rate limited (429): that entry cools down for the provider's
//!   `retry-after` (or `llm.cooldown_s`) and the next entry is tried at once;
//!   while cooling down it is skipped;
//! - refused credentials (401/403): the entry is unhealthy — skipped until the
//!   daemon restarts or `doctor` finds it working again ([`Cascade::recheck`]);
//! - context too long: the oldest half of the earlier turns is dropped once
//!   and the same entry asked again;
//! - anything else (5xx, timeout, unreachable, malformed answer, another
//!   refusal): the next entry.
//!
//! When none answers, [`Exhausted`] says in one sentence what each did.
//! Each entry's calls, tokens, state and last error are kept for `status`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use passepartout_gateway::markup::escape;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::setup_hint::SetupHint;
use crate::model::llm::{ChatMessage, ChatModel, ChatRequest, ChatResponse, LlmError, TextSink, ToolSpec};

/// Longest cooldown a provider's `retry-after` can impose.
const MAX_COOLDOWN: Duration = Duration::from_secs(3600);

/// What the model sees: the system prompt, earlier turns (oldest first, each
/// a block of messages), and this turn so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    pub system: String,
    pub earlier: Vec<Vec<ChatMessage>>,
    pub turn: Vec<ChatMessage>,
}

impl Context {
    fn request(&self, tools: &Arc<[ToolSpec]>) -> ChatRequest {
        let earlier = self.earlier.iter().map(Vec::len).sum::<usize>();
        let mut messages = Vec::with_capacity(1 + earlier + self.turn.len());
        messages.push(ChatMessage::system(self.system.clone()));
        messages.extend(self.earlier.iter().flatten().cloned());
        messages.extend(self.turn.iter().cloned());
        ChatRequest {
            max_tokens: None,
            messages,
            tools: tools.clone(),
        }
    }

    /// The context without the older half of the earlier turns, or `None`
    /// when there is nothing left to drop.
    fn trimmed(&self) -> Option<Context> {
        if self.earlier.is_empty() {
            return None;
        }
        let keep = self.earlier.len() / 2;
        Some(Context {
            earlier: self.earlier[self.earlier.len() - keep..].to_vec(),
            ..self.clone()
        })
    }
}

/// Why one entry did not answer.
#[derive(Debug)]
pub enum Skip {
    /// It was asked and failed.
    Failed(LlmError),
    /// It is cooling down after a rate limit, for this much longer.
    CoolingDown(Duration),
    /// Its credentials were refused earlier.
    Unhealthy,
}

/// `model`'s endpoint as people may see it (status, dashboard, chat, logs):
/// without the credentials or secret query values a `base_url` may hold.
fn shown_endpoint(model: &dyn ChatModel) -> String {
    crate::config::masked::without_credentials(model.endpoint())
}

/// One entry that did not answer, and why.
#[derive(Debug)]
pub struct ProviderFailure {
    pub name: String,
    pub endpoint: String,
    pub skip: Skip,
}

/// No entry answered.
#[derive(Debug)]
pub struct Exhausted {
    pub failures: Vec<ProviderFailure>,
    /// Where the person chooses a model, when none is reachable.
    pub hint: Arc<SetupHint>,
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sentence(&self.hint.to_string()))
    }
}

/// The end of the sentence on a surface with no `passepartout` command at
/// hand: a chat never shows a command for a shell.
const ASK_THE_OWNER: &str = "Start that server, or ask whoever runs this assistant to choose another model.";

impl Exhausted {
    /// What a person is told on `surface`: how to choose a model with
    /// `passepartout setup` at a terminal on the daemon's machine, and in a
    /// chat, to ask whoever runs it.
    pub fn told_on(&self, surface: passepartout_gateway::Surface) -> String {
        if surface.terminal {
            self.to_string()
        } else {
            self.sentence(ASK_THE_OWNER)
        }
    }

    /// Every provider's failure, then `ending` (or when to try again, when
    /// one is only rate limited).
    fn sentence(&self, ending: &str) -> String {
        let mut text = String::from("No language model answered (");
        for (index, failure) in self.failures.iter().enumerate() {
            if index > 0 {
                text.push_str("; ");
            }
            // Markdown, shown to people: the endpoint and what the provider
            // said are its words, not markup.
            text.push_str(&format!(
                "{} at {}: {}",
                escape(&failure.name),
                escape(&failure.endpoint),
                escape(&failure.skip.to_string())
            ));
        }
        match self.rate_limited_for() {
            Some(rest) => text.push_str(&format!(
                "). Rate limited: the provider is tried again in {} s; send it again then.",
                rest.as_secs().max(1)
            )),
            None => text.push_str(&format!("). {ending}")),
        }
        text
    }

    /// When every entry is resting after a rate limit, how long until the
    /// first is tried again: starting a server would not help then.
    fn rate_limited_for(&self) -> Option<Duration> {
        self.failures
            .iter()
            .map(|failure| match failure.skip {
                Skip::CoolingDown(rest) => Some(rest),
                _ => None,
            })
            .try_fold(None, |soonest: Option<Duration>, rest| {
                rest.map(|rest| Some(soonest.map_or(rest, |s| s.min(rest))))
            })
            .flatten()
    }
}

/// An answer, with the entry that gave it.
#[derive(Debug)]
pub struct Answered {
    pub response: ChatResponse,
    /// The name of the entry that answered.
    pub provider: String,
    /// The entries asked or skipped before it, and why they did not answer.
    pub passed_over: Vec<ProviderFailure>,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Failed(error) => write!(f, "{error}"),
            Skip::CoolingDown(left) => write!(f, "rate limited, resting {} s more", left.as_secs().max(1)),
            Skip::Unhealthy => f.write_str("credentials refused; fix the key, then run `passepartout doctor`"),
        }
    }
}

/// An entry's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    #[default]
    Ok,
    CoolingDown,
    Unhealthy,
    /// Its last call could not reach it or timed out: it is still tried,
    /// but it is not known to work.
    Unreachable,
}

/// What `status` and `doctor` show of one entry (and read back from the
/// status document).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderHealth {
    pub name: String,
    pub endpoint: String,
    pub state: EntryState,
    /// Seconds of cooldown left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cooldown_s: Option<u64>,
    pub calls: u64,
    pub failures: u64,
    /// The failures by kind ([`LlmError::kind`]); the kinds never seen are left out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_kinds: BTreeMap<String, u64>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Default)]
struct Tracking {
    calls: u64,
    failures: u64,
    /// Failures by kind; a map of the few kinds seen, filled once each.
    failure_kinds: BTreeMap<&'static str, u64>,
    tokens_in: u64,
    tokens_out: u64,
    last_error: Option<String>,
    cooling_until: Option<Instant>,
    unhealthy: bool,
    /// The last call failed in transport: refused, unresolved, timed out.
    unreachable: bool,
}

struct Entry {
    model: Arc<dyn ChatModel>,
    tracking: Mutex<Tracking>,
}

impl Entry {
    fn track<T>(&self, update: impl FnOnce(&mut Tracking) -> T) -> T {
        let mut tracking = self.tracking.lock().unwrap_or_else(|p| p.into_inner());
        update(&mut tracking)
    }

    /// Why the entry is not asked now, if it is not: its credentials were
    /// refused, or it cools down after a rate limit.
    fn resting(&self) -> Option<Skip> {
        let now = Instant::now();
        self.track(|t| {
            if t.unhealthy {
                Some(Skip::Unhealthy)
            } else {
                t.cooling_until
                    .filter(|until| *until > now)
                    .map(|until| Skip::CoolingDown(until - now))
            }
        })
    }

    fn failure(&self, name: &str, skip: Skip) -> ProviderFailure {
        ProviderFailure {
            name: name.to_owned(),
            endpoint: shown_endpoint(&*self.model),
            skip,
        }
    }
}

/// The models, in the order they are tried.
pub struct Cascade {
    /// Replaced whole when the configuration is reloaded; a call under way
    /// keeps the line-up it started with.
    lineup: ArcSwap<Lineup>,
    /// What a person is told to do when none answers.
    hint: Arc<SetupHint>,
}

/// The entries and the rest a rate limit imposes when the provider names none.
struct Lineup {
    entries: Vec<Arc<Entry>>,
    default_cooldown: Duration,
}

impl Lineup {
    fn new(models: Vec<Arc<dyn ChatModel>>, default_cooldown: Duration) -> Self {
        let entries = models
            .into_iter()
            .map(|model| {
                Arc::new(Entry {
                    model,
                    tracking: Mutex::new(Tracking::default()),
                })
            })
            .collect();
        Self {
            entries,
            default_cooldown,
        }
    }
}

impl Cascade {
    pub fn new(models: Vec<Arc<dyn ChatModel>>, default_cooldown: Duration) -> Self {
        Self {
            lineup: ArcSwap::from_pointee(Lineup::new(models, default_cooldown)),
            hint: Arc::default(),
        }
    }

    /// The same cascade, telling a person `hint` when no model answers.
    pub fn with_hint(mut self, hint: SetupHint) -> Self {
        self.hint = Arc::new(hint);
        self
    }

    /// Asks `models` from now on (a reloaded configuration's). An entry of
    /// the same name and endpoint keeps its counts and a rate limit's rest;
    /// whether its credentials were refused is forgotten, since a reload is
    /// how a fixed key is taken.
    pub fn replace(&self, models: Vec<Arc<dyn ChatModel>>, default_cooldown: Duration) {
        let old = self.lineup.load_full();
        let lineup = Lineup::new(models, default_cooldown);
        for entry in &lineup.entries {
            let same = old
                .entries
                .iter()
                .find(|o| o.model.name() == entry.model.name() && o.model.endpoint() == entry.model.endpoint());
            if let Some(previous) = same {
                let kept = previous.track(|t| Tracking {
                    calls: t.calls,
                    failures: t.failures,
                    failure_kinds: t.failure_kinds.clone(),
                    tokens_in: t.tokens_in,
                    tokens_out: t.tokens_out,
                    last_error: t.last_error.clone(),
                    cooling_until: t.cooling_until,
                    unhealthy: false,
                    unreachable: t.unreachable,
                });
                entry.track(|t| *t = kept);
            }
        }
        self.lineup.store(Arc::new(lineup));
    }

    /// The models, in order.
    pub fn models(&self) -> Vec<Arc<dyn ChatModel>> {
        self.lineup
            .load()
            .entries
            .iter()
            .map(|entry| entry.model.clone())
            .collect()
    }

    /// Whether any entry's model can see images.
    pub fn sees_images(&self) -> bool {
        self.lineup.load().entries.iter().any(|entry| entry.model.vision())
    }

    /// A snapshot of every entry.
    pub fn health(&self) -> Vec<ProviderHealth> {
        let now = Instant::now();
        self.lineup
            .load()
            .entries
            .iter()
            .map(|entry| {
                entry.track(|t| {
                    let cooldown = t.cooling_until.filter(|until| *until > now).map(|until| until - now);
                    let state = if t.unhealthy {
                        EntryState::Unhealthy
                    } else if cooldown.is_some() {
                        EntryState::CoolingDown
                    } else if t.unreachable {
                        EntryState::Unreachable
                    } else {
                        EntryState::Ok
                    };
                    ProviderHealth {
                        name: entry.model.name().to_owned(),
                        endpoint: shown_endpoint(&*entry.model),
                        state,
                        cooldown_s: cooldown.map(|left| left.as_secs().max(1)),
                        calls: t.calls,
                        failures: t.failures,
                        failure_kinds: t
                            .failure_kinds
                            .iter()
                            .map(|(kind, n)| ((*kind).to_owned(), *n))
                            .collect(),
                        tokens_in: t.tokens_in,
                        tokens_out: t.tokens_out,
                        last_error: t.last_error.clone(),
                    }
                })
            })
            .collect()
    }

    /// Asks the entries in order until one answers.
    pub async fn complete(&self, context: &Context, tools: &Arc<[ToolSpec]>) -> Result<ChatResponse, Exhausted> {
        self.complete_preferring(context, tools, None).await
    }

    /// Like [`Cascade::complete`], but asks the entry named `preferred`
    /// first (a loop's supervisor model), then the others in order. An
    /// unknown name changes nothing.
    pub async fn complete_preferring(
        &self,
        context: &Context,
        tools: &Arc<[ToolSpec]>,
        preferred: Option<&str>,
    ) -> Result<ChatResponse, Exhausted> {
        self.answer(context, tools, preferred, None)
            .await
            .map(|answered| answered.response)
    }

    /// The entries' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.lineup
            .load()
            .entries
            .iter()
            .map(|entry| entry.model.name().to_owned())
            .collect()
    }

    /// Like [`Cascade::complete_preferring`], saying which entry answered
    /// and which did not before it. With a `sink`, each entry streams its
    /// text there as it writes it; the text of an entry that fails is
    /// discarded before the next is asked.
    pub async fn answer(
        &self,
        context: &Context,
        tools: &Arc<[ToolSpec]>,
        preferred: Option<&str>,
        sink: Option<&dyn TextSink>,
    ) -> Result<Answered, Exhausted> {
        let lineup = self.lineup.load_full();
        let entries = &lineup.entries;
        let first = preferred.and_then(|name| entries.iter().position(|e| e.model.name() == name));
        let order = first
            .into_iter()
            .chain((0..entries.len()).filter(|index| Some(*index) != first));
        let mut failures = Vec::new();
        for entry in order.map(|index| &entries[index]) {
            let name = entry.model.name();
            if let Some(skip) = entry.resting() {
                tracing::debug!(provider = name, ?skip, "provider skipped");
                failures.push(entry.failure(name, skip));
                continue;
            }
            match ask(entry, lineup.default_cooldown, context, tools, sink).await {
                Ok(response) => {
                    return Ok(Answered {
                        response,
                        provider: name.to_owned(),
                        passed_over: failures,
                    });
                }
                // A rate limit is told as the rest it imposed, so the
                // answer can say when the entry is tried again.
                Err(LlmError::RateLimited { .. }) => {
                    let now = Instant::now();
                    let rest = entry.track(|t| t.cooling_until.map(|until| until.saturating_duration_since(now)));
                    failures.push(entry.failure(name, Skip::CoolingDown(rest.unwrap_or_default())));
                }
                Err(error) => failures.push(entry.failure(name, Skip::Failed(error))),
            }
        }
        Err(Exhausted {
            failures,
            hint: self.hint.clone(),
        })
    }

    /// Asks the entry named `name` alone, offering no tools: for a vote,
    /// not a turn. Counted like any call (tokens, failures, a rate limit's
    /// rest); an entry resting or refused is not asked. `None` when no
    /// entry has that name.
    pub async fn consult(&self, name: &str, context: &Context) -> Option<Result<ChatResponse, Skip>> {
        let lineup = self.lineup.load_full();
        let entry = lineup.entries.iter().find(|entry| entry.model.name() == name)?;
        if let Some(skip) = entry.resting() {
            return Some(Err(skip));
        }
        let no_tools: Arc<[ToolSpec]> = Arc::new([]);
        Some(
            ask(entry, lineup.default_cooldown, context, &no_tools, None)
                .await
                .map_err(Skip::Failed),
        )
    }

    /// Probes every entry (for `doctor`); an entry that answers is healthy
    /// again and its cooldown is lifted.
    pub async fn recheck(&self) -> Vec<(String, Result<(), LlmError>)> {
        let lineup = self.lineup.load_full();
        let mut results = Vec::with_capacity(lineup.entries.len());
        for entry in &lineup.entries {
            let result = entry.model.probe().await;
            match &result {
                Ok(()) => entry.track(|t| {
                    t.unhealthy = false;
                    t.cooling_until = None;
                    t.last_error = None;
                    t.unreachable = false;
                }),
                Err(error) => entry.track(|t| {
                    t.unhealthy |= matches!(error, LlmError::Unauthorized { .. });
                    t.unreachable = is_transport(error);
                    t.last_error = Some(error.to_string());
                }),
            }
            results.push((entry.model.name().to_owned(), result));
        }
        results
    }
}

/// One entry, with at most one trimmed retry.
async fn ask(
    entry: &Entry,
    default_cooldown: Duration,
    context: &Context,
    tools: &Arc<[ToolSpec]>,
    sink: Option<&dyn TextSink>,
) -> Result<ChatResponse, LlmError> {
    let mut trimmed: Option<Context> = None;
    loop {
        let request = trimmed.as_ref().unwrap_or(context).request(tools);
        let result = match sink {
            Some(sink) => {
                let result = entry.model.stream(&request, sink).await;
                if result.is_err() {
                    // What it wrote is no answer; a retry or the next entry starts afresh.
                    sink.discard();
                }
                result
            }
            None => entry.model.complete(&request).await,
        };
        entry.track(|t| {
            t.calls += 1;
            match &result {
                Ok(response) => {
                    t.tokens_in += response.usage.input_tokens;
                    t.tokens_out += response.usage.output_tokens;
                    t.last_error = None;
                    t.unreachable = false;
                }
                Err(error) => {
                    t.failures += 1;
                    *t.failure_kinds.entry(error.kind()).or_default() += 1;
                    t.last_error = Some(error.to_string());
                    t.unreachable = is_transport(error);
                }
            }
        });
        let error = match result {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        let name = entry.model.name();
        tracing::warn!(provider = name, endpoint = shown_endpoint(&*entry.model), %error, "provider failed");
        match &error {
            LlmError::ContextTooLong if trimmed.is_none() => {
                if let Some(shorter) = context.trimmed() {
                    tracing::info!(
                        provider = name,
                        kept = shorter.earlier.len(),
                        "context too long; retrying with fewer earlier turns"
                    );
                    trimmed = Some(shorter);
                    continue;
                }
            }
            LlmError::RateLimited { retry_after } => {
                let rest = retry_after.unwrap_or(default_cooldown).min(MAX_COOLDOWN);
                entry.track(|t| t.cooling_until = Some(Instant::now() + rest));
            }
            LlmError::Unauthorized { .. } => entry.track(|t| t.unhealthy = true),
            _ => {}
        }
        return Err(error);
    }
}

/// Whether `error` says the provider was not reached or did not answer at
/// all, as opposed to answering with a refusal.
fn is_transport(error: &LlmError) -> bool {
    matches!(error, LlmError::Timeout | LlmError::Unreachable { .. })
}

#[cfg(test)]
#[path = "cascade_tests.rs"]
mod tests;
