//! The Perceive → Reason → Act pipeline for one turn.
//!
//! [`Pipeline::run`] composes the three stages: perceive the inbound message
//! (an approval answer is decided right there), then reason and act until act
//! returns no feedback signal, a call waits for approval, the depth limit is
//! reached, or no model answers. [`Pipeline::settle`] is the turn that tells a
//! conversation an approval's outcome (and runs what was approved). Each turn
//! is given the conversation's running summary and recent turns, and folds
//! the oldest into the summary when they outgrow `memory.context_tokens`
//! (`compaction.rs`). Neither writes the turn: each returns what it produced,
//! and the conversation worker commits that in one transaction.

pub mod act;
pub mod cascade;
pub mod commands;
pub mod compaction;
pub mod consensus;
pub mod model_command;
mod output;
pub mod perceive;
pub mod reason;
mod settle;
pub mod setup_hint;
pub mod tool_list;
pub mod usage_report;
mod watch;

use std::sync::Arc;

use passepartout_gateway::markup::escape;
use passepartout_gateway::{Inbound, MessageId, ReplyKind};

use crate::config::{Config, MemoryConfig, PipelineConfig};
use crate::foundation::clock::Clock;
use crate::model::llm::{ChatMessage, ToolSpec};
use crate::model::media::Media;
use crate::model::memory::{MemoryLimits, MemorySession};
use crate::model::signal::{Message, Origin, Signal, SignalBody};
use crate::safety::approvals::{Approval, Approvals, Handled};
use crate::safety::skills::Skills;
use crate::safety::tools::{InLoop, SET_NEXT_SLEEP, ToolBox, ToolContext};
use crate::store::Fact;
use cascade::Cascade;
use commands::{ChannelAsk, ChatChange};
use compaction::Earlier;
use consensus::Consensus;
use model_command::ProviderInfo;
pub use output::{Cost, SummaryChange, TurnOutput, TurnRecord};
use perceive::Perception;
use tool_list::ToolList;
pub use watch::{Finished, FinishedRounds, TurnWatch};

/// How a turn reasons, beyond its signal.
#[derive(Clone, Default)]
struct TurnOptions {
    /// Keep the turn in the history even if no model answers at all
    /// (something already happened that must not be forgotten).
    keep: bool,
    /// The cascade entry asked first (a loop's supervisor model).
    preferred_model: Option<String>,
    /// The provider this conversation pinned (`/model NAME`): asked first
    /// when no supervisor model is, and the reply says when it failed.
    pinned: Option<String>,
    /// The loop whose iteration this is: offers `set_next_sleep`.
    loop_turn: Option<Arc<dyn InLoop>>,
    /// Who watches the turn as it runs.
    watch: TurnWatch,
    /// An API client's own instructions, shown after the assistant's.
    instructions: Option<String>,
}

/// A turn nobody wrote: a background loop's iteration, entering the pipeline
/// like a message in its conversation, so the same skills gate its tool
/// calls and a risky call waits for an approval there.
pub struct BackgroundTurn {
    /// Where it is said, by whom (the loop), under which id.
    pub origin: Origin,
    /// What the model reads.
    pub text: String,
    /// The cascade entry asked first (a supervisor's model).
    pub preferred_model: Option<String>,
    /// The loop it is an iteration of: offers `set_next_sleep`.
    pub in_loop: Arc<dyn InLoop>,
}

/// The stages with what they need.
pub struct Pipeline {
    settings: PipelineConfig,
    cascade: Arc<Cascade>,
    tools: ToolBox,
    skills: Skills,
    approvals: Arc<Approvals>,
    /// Dates the tool calls that run.
    clock: Clock,
    memory: MemoryConfig,
    max_repairs: u32,
    /// Reads the media people send.
    media: Arc<Media>,
    /// The configured providers, as `/model` and `/usage` show them.
    providers: Vec<ProviderInfo>,
    /// The models' vote on some calls (`[skills.consensus]`), if any vote.
    consensus: Option<Consensus>,
}

impl Pipeline {
    /// A pipeline asking `cascade`, running `tools` behind `skills`, holding
    /// actions for `approvals`, on `clock`, with the pipeline, memory and
    /// `llm.max_repairs` settings of `config`.
    pub fn new(
        config: &Config,
        cascade: Arc<Cascade>,
        tools: ToolBox,
        skills: Skills,
        approvals: Arc<Approvals>,
        clock: Clock,
    ) -> Self {
        Self {
            settings: config.pipeline.clone(),
            consensus: Consensus::new(&config.skills.consensus, cascade.clone()),
            cascade,
            tools,
            skills,
            approvals,
            clock,
            memory: config.memory.clone(),
            max_repairs: config.llm.max_repairs,
            media: Arc::new(Media::unplugged(config)),
            providers: config
                .llm
                .providers
                .iter()
                .map(|p| ProviderInfo {
                    name: p.name.clone(),
                    model: p.model.clone(),
                    price_in_per_mtok: p.price_in_per_mtok,
                    price_out_per_mtok: p.price_out_per_mtok,
                })
                .collect(),
        }
    }

    /// The tools and the gates, for `/tools` and `passepartout tools`.
    pub fn tool_list(&self) -> ToolList {
        ToolList {
            tools: self.tools.clone(),
            skills: self.skills.clone(),
        }
    }

    /// The configured providers, with their models and prices.
    pub fn providers(&self) -> &[ProviderInfo] {
        &self.providers
    }

    /// The pipeline reading media with `media` (the gateways' fetchers and
    /// the transcriber) rather than with none.
    pub fn with_media(self, media: Media) -> Self {
        Self {
            media: Arc::new(media),
            ..self
        }
    }

    /// This pipeline with `config`'s prompt, memory limits, repairs, model
    /// prices and consensus vote, and gated by `skills` instead (a reloaded
    /// configuration's); the same models, tools, approvals and media.
    pub fn reconfigured(&self, config: &Config, skills: Skills) -> Self {
        let fresh = Self::new(
            config,
            self.cascade.clone(),
            self.tools.clone(),
            skills.with_telemetry(self.skills.telemetry().clone()),
            self.approvals.clone(),
            self.clock,
        );
        Self {
            media: self.media.clone(),
            ..fresh
        }
    }

    /// Whether turns in the group `conversation` read what the person
    /// speaking keeps (`memory.facts_in_groups`).
    pub fn reads_facts_in(&self, conversation: &passepartout_gateway::ConversationKey) -> bool {
        let named = format!("{}:{}", conversation.gateway, conversation.chat);
        self.memory.facts_in_groups.contains(&named)
    }

    /// What one person may keep in memory.
    pub fn memory_limits(&self) -> MemoryLimits {
        MemoryLimits {
            max_facts: self.memory.max_facts,
            max_fact_chars: self.memory.max_fact_chars,
        }
    }

    /// Runs one turn for `inbound`, given the conversation's summary and
    /// recent turns (`earlier`), the provider it `pinned` and the sender's
    /// `memory`; `view` renders a report about the daemon for `/status`,
    /// `/loops` and `/usage`. The turn tells `watch` of its text and
    /// finished rounds as it goes.
    pub async fn run(
        &self,
        inbound: &Inbound,
        earlier: Earlier<'_>,
        pinned: Option<&str>,
        memory: MemorySession,
        view: impl FnOnce(commands::View) -> String,
        watch: TurnWatch,
    ) -> TurnOutput {
        let signal = match self.perceived(inbound) {
            Ok(Perception::Signal(signal)) => signal,
            Ok(Perception::Command(command)) => return self.command(command, inbound, &earlier, pinned, view),
            Ok(Perception::Ignore | Perception::Answer(_)) => return TurnOutput::default(),
            Err(answered) => return *answered,
        };
        let (first, told, heard) = match self.first_message(inbound, &signal).await {
            Ok(first) => first,
            Err(told) => return told,
        };
        let options = TurnOptions {
            pinned: pinned.map(str::to_owned),
            watch,
            instructions: inbound.client.as_ref().and_then(|client| client.instructions.clone()),
            ..TurnOptions::default()
        };
        let mut output = self.converse(signal, first, earlier, memory, options).await;
        output.tell_first(told, &heard);
        output
    }

    /// What `inbound` is; an answer to an approval prompt is decided here
    /// (`Err`: what the turn says then).
    fn perceived(&self, inbound: &Inbound) -> Result<Perception, Box<TurnOutput>> {
        let perception = perceive::perceive(inbound);
        let Perception::Answer(parsed) = perception else {
            return Ok(perception);
        };
        match self.approvals.answer(inbound, parsed) {
            Ok(Handled::Answered { replies, settle }) => Err(Box::new(TurnOutput {
                replies,
                settle,
                ..TurnOutput::default()
            })),
            Ok(Handled::NotAnAnswer) => Ok(perceive::ordinary(inbound)),
            Err(error) => {
                tracing::error!(%error, "cannot read approvals");
                Err(Box::new(approvals_unread(&error)))
            }
        }
    }

    /// Answers `command`, a command for the daemon itself.
    fn command(
        &self,
        command: perceive::Command,
        inbound: &Inbound,
        earlier: &Earlier<'_>,
        pinned: Option<&str>,
        view: impl FnOnce(commands::View) -> String,
    ) -> TurnOutput {
        match command {
            perceive::Command::Approvals => match self.approvals.waiting_in(&inbound.conversation) {
                Ok(text) => TurnOutput::notice(text),
                Err(error) => approvals_unread(&error),
            },
            perceive::Command::Tools => {
                let origin = Origin {
                    conversation: inbound.conversation.clone(),
                    sender: inbound.sender.id.clone(),
                    message_id: inbound.message_id.clone(),
                    sender_names: Default::default(),
                };
                TurnOutput::notice(tool_list::render(&self.tool_list().lines(&origin)))
            }
            perceive::Command::Model(arg) => {
                let health = self.cascade.health();
                let (text, chat) = model_command::answer(arg.as_deref(), &self.providers, &health, pinned);
                TurnOutput {
                    chat,
                    ..TurnOutput::notice(text)
                }
            }
            perceive::Command::Handoff(to) => TurnOutput::asking(ChannelAsk::HandOff(to)),
            perceive::Command::Continue => TurnOutput::asking(ChannelAsk::Continue),
            perceive::Command::Here => TurnOutput::asking(ChannelAsk::Here),
            perceive::Command::Summary => TurnOutput::notice(compaction::shown(earlier.summary, self.compacting())),
            command => {
                let outcome = commands::execute(&command, view);
                let fresh = command == perceive::Command::New;
                TurnOutput {
                    forget: outcome.forget,
                    chat: fresh.then_some(ChatChange::FreshStart),
                    summary: fresh.then_some(SummaryChange::Clear),
                    ..TurnOutput::notice(outcome.text)
                }
            }
        }
    }

    /// What the model reads first for `signal`, with what the person is
    /// told and what was heard in their media (`Err`: nothing for the
    /// model; what the person is told instead).
    async fn first_message(
        &self,
        inbound: &Inbound,
        signal: &Signal,
    ) -> Result<(ChatMessage, Vec<(ReplyKind, String)>, Vec<String>), TurnOutput> {
        match &signal.body {
            SignalBody::Message(message) => Ok((ChatMessage::user(message.text.clone()), Vec::new(), Vec::new())),
            SignalBody::Media(media) => {
                let vision = self.cascade.sees_images();
                let gateway = &inbound.conversation.gateway;
                let caption = media.caption.as_deref();
                let reading = self.media.read(gateway, &media.attachments, caption, vision).await;
                match reading.message {
                    Some(message) => Ok((message, reading.told, reading.heard)),
                    // Nothing for the model: the person is told why.
                    None => Err(TurnOutput {
                        replies: reading.told,
                        ..TurnOutput::default()
                    }),
                }
            }
            SignalBody::Unreadable(unreadable) => Err(TurnOutput::notice(format!(
                "I can't read this {}: I read text, voice notes, photos and files.",
                escape(&unreadable.what)
            ))),
            SignalBody::ToolResults(_) | SignalBody::Correction(_) => {
                Ok((ChatMessage::user(String::new()), Vec::new(), Vec::new()))
            }
        }
    }

    /// Runs a background `turn` given its conversation's summary and recent
    /// turns (`earlier`) and the loop's own `memory`.
    pub async fn run_background(
        &self,
        turn: BackgroundTurn,
        earlier: Earlier<'_>,
        memory: MemorySession,
    ) -> TurnOutput {
        let BackgroundTurn {
            origin,
            text,
            preferred_model,
            in_loop,
        } = turn;
        let signal = Signal {
            origin,
            depth: 0,
            body: SignalBody::Message(Message { text: text.clone() }),
        };
        let options = TurnOptions {
            keep: false,
            preferred_model,
            pinned: None,
            loop_turn: Some(in_loop),
            watch: TurnWatch::default(),
            instructions: None,
        };
        self.converse(signal, ChatMessage::user(text), earlier, memory, options)
            .await
    }

    /// Tells `approval`'s conversation its outcome: runs an approved action
    /// (once: a run interrupted by a crash is reported, never repeated) and
    /// lets the model finish with the result, or with the denial; a timeout
    /// or a cancellation is noted in the history, and a timeout told.
    pub async fn settle(&self, approval: &Approval, earlier: Earlier<'_>, memory: MemorySession) -> TurnOutput {
        let outcome = settle::outcome(self, approval, &memory).await;
        let token = approval.token.clone();
        let mut output = match outcome.note {
            settle::Note::ForModel(told) => {
                // A turn of its own: its tool calls get ids of their own too.
                let turn =
                    MessageId::new(format!("approval-{}", token.as_str())).expect("a token makes a valid message id");
                let signal = Signal {
                    origin: Origin {
                        conversation: approval.conversation.clone(),
                        sender: approval.requester.clone(),
                        message_id: turn,
                        sender_names: Default::default(),
                    },
                    depth: 0,
                    body: SignalBody::Message(crate::model::signal::Message {
                        text: told.text.clone(),
                    }),
                };
                let options = TurnOptions {
                    keep: true,
                    ..TurnOptions::default()
                };
                self.converse(signal, told.message(), earlier, memory, options).await
            }
            settle::Note::HistoryOnly(told) => TurnOutput {
                record: Some(TurnRecord {
                    messages: vec![told.message()],
                    at_ms: None,
                    by: Some(approval.requester.clone()),
                }),
                ..TurnOutput::default()
            },
            settle::Note::NotNow(failure) => {
                // Not settled: it is tried again at the next start.
                return TurnOutput {
                    replies: vec![(ReplyKind::Failure, failure)],
                    ..TurnOutput::default()
                };
            }
        };
        let mut replies = outcome.notices;
        replies.append(&mut output.replies);
        output.replies = replies;
        let mut files = outcome.files;
        files.append(&mut output.files);
        output.files = files;
        // Every message of its prompts (the first, and a reminder) gives way
        // to the outcome, and their buttons go.
        let decided = approval.decided_text();
        for prompt in &approval.prompts {
            output.decided.push((token.clone(), prompt.clone(), decided.clone()));
        }
        output.settled.push((token, outcome.run));
        output
    }

    /// Reasons and acts on `signal` (which the model reads as `first`) until
    /// the model answers, asks for approval, or a limit stops it.
    async fn converse(
        &self,
        signal: Signal,
        first: ChatMessage,
        earlier: Earlier<'_>,
        memory: MemorySession,
        options: TurnOptions,
    ) -> TurnOutput {
        let origin = signal.origin.clone();
        let specs = self.offered_tools(&origin, options.loop_turn.is_some());
        let mut output = TurnOutput::default();
        let preferred = options.preferred_model.as_deref().or(options.pinned.as_deref());
        let (summary, history) = self.compact(earlier, preferred, &mut output).await;
        // Built once; each round appends to its `turn`, which is the transcript.
        let mut context = self.context_for(&origin, &options, &memory, first, summary.as_deref(), history);
        let tool_context = ToolContext {
            conversation: origin.conversation.clone(),
            sender: origin.sender.clone(),
            memory,
            loop_turn: options.loop_turn,
            outgoing: Default::default(),
        };
        let actuators = act::Actuators {
            tools: &self.tools,
            skills: &self.skills,
            context: &tool_context,
            clock: self.clock,
            consensus: self.consensus.as_ref(),
            standing: Some(&self.approvals),
        };
        // A turn stopped before its first round is done still keeps the
        // person's message.
        options.watch.finished_round(&context.turn, &[], Vec::new);
        let mut repairs = 0;
        let mut signal = signal;
        let mut pin_failure_told = false;
        let sink = options.watch.sink.as_deref();
        loop {
            let preferred = options.preferred_model.as_deref().or(options.pinned.as_deref());
            let answered = match self.cascade.answer(&context, &specs, preferred, sink).await {
                Ok(answered) => answered,
                Err(exhausted) => {
                    output.no_model_answered(exhausted.told_on(self.approvals.surface_of(&origin.conversation)));
                    if context.turn.len() == 1 && !options.keep {
                        // Nothing happened yet: not remembered; the person can simply ask again.
                        return output.nothing_kept();
                    }
                    // Tools already ran: keep what they did, so asking again
                    // does not silently do it twice.
                    break;
                }
            };
            output.cost.count(&answered.response, &answered.provider);
            if let Some(pinned) = options.pinned.as_deref().filter(|_| !pin_failure_told)
                && answered.provider != pinned
            {
                pin_failure_told = true;
                output.replies.push((ReplyKind::Notice, pin_failed(pinned, &answered)));
            }
            let acted = act::act(&signal, reason::interpret(answered.response), &actuators, &context).await;
            output.cost.count_votes(&acted.voted);
            context.turn.extend(acted.transcript);
            output.replies.extend(acted.replies);
            output.audit.extend(acted.audit);
            repairs += acted.repairs;
            if !acted.requested.is_empty() {
                // The turn waits for a person now; the prompts say so.
                output.requested = acted
                    .requested
                    .into_iter()
                    .map(|requested| self.approvals.request(&origin, requested))
                    .collect();
                break;
            }
            let Some(next) = acted.feedback else {
                break;
            };
            let memory = || tool_context.memory.writes();
            options.watch.finished_round(&context.turn, &output.audit, memory);
            if let Some(notice) = self.limit_reached(&origin, repairs, next.depth) {
                output.replies.push((ReplyKind::Notice, notice));
                break;
            }
            // The next round writes a text of its own; this one's was no reply.
            if let Some(sink) = sink {
                sink.discard();
            }
            signal = next;
        }
        kept(output, context.turn, &origin, &tool_context)
    }

    /// The context a turn started by `origin` reasons in: the system prompt
    /// with the skills' prompts, the client's `instructions`, the facts
    /// `memory` holds about `first`, the `summary` and `history` of the
    /// conversation, then `first`.
    fn context_for(
        &self,
        origin: &Origin,
        options: &TurnOptions,
        memory: &MemorySession,
        first: ChatMessage,
        summary: Option<&str>,
        history: &[TurnRecord],
    ) -> cascade::Context {
        reason::build_context(
            &self.settings.system_prompt,
            &self.skills.prompts(origin),
            options.instructions.as_deref(),
            &self.facts(memory, &first.content),
            summary,
            history,
            vec![first],
        )
    }

    /// Whether the earlier conversation is kept within `memory.context_tokens`.
    pub fn compacting(&self) -> bool {
        self.memory.context_tokens > 0
    }

    /// The tools offered to the model for a turn started by `origin`: those
    /// the skills let it see, and `set_next_sleep` only in a loop's iteration.
    fn offered_tools(&self, origin: &Origin, in_loop: bool) -> Arc<[ToolSpec]> {
        let all = self.tools.specs();
        let offered = |name: &str| (in_loop || name != SET_NEXT_SLEEP) && self.skills.offers(name, origin);
        if all.iter().all(|spec| offered(&spec.name)) {
            all.clone()
        } else {
            all.iter().filter(|spec| offered(&spec.name)).cloned().collect()
        }
    }

    /// What to tell the person when the turn must stop before acting on its
    /// next signal: the model's output stayed malformed too often, or the
    /// signal is deeper than `pipeline.max_depth`.
    fn limit_reached(&self, origin: &Origin, repairs: u32, depth: u32) -> Option<String> {
        if repairs > self.max_repairs {
            tracing::warn!(conversation = %origin.conversation, repairs, "model output stayed malformed");
            return Some(format!(
                "The model kept answering in a form I cannot use ({repairs} times), so I stopped. \
                 Try again, or a different model (`llm.max_repairs`)."
            ));
        }
        if depth > self.settings.max_depth {
            tracing::warn!(conversation = %origin.conversation, depth, "depth limit reached");
            return Some(format!(
                "I stopped after {} steps without finishing (the limit is `pipeline.max_depth`).",
                self.settings.max_depth
            ));
        }
        None
    }

    /// The sender's facts most related to `text`, for the context.
    fn facts(&self, memory: &MemorySession, text: &str) -> Vec<Fact> {
        if self.memory.context_facts == 0 {
            return Vec::new();
        }
        match memory.facts() {
            Ok(facts) => crate::model::memory::relevant(facts, text, self.memory.context_facts),
            Err(error) => {
                // The turn goes on without them; `recall` will report the error.
                tracing::error!(%error, "cannot read memory for the context");
                Vec::new()
            }
        }
    }
}

/// `message` as the history keeps it: its images by reference only.
fn without_image_bytes(mut message: ChatMessage) -> ChatMessage {
    message.drop_image_bytes();
    message
}

/// Tells that the provider `pinned` in this conversation did not give the
/// answer, and why, and who did.
fn pin_failed(pinned: &str, answered: &cascade::Answered) -> String {
    let why = answered
        .passed_over
        .iter()
        .find(|failure| failure.name == pinned)
        .map(|failure| {
            format!(
                "{} did not answer ({})",
                escape(pinned),
                escape(&failure.skip.to_string())
            )
        })
        .unwrap_or_else(|| format!("{} is no longer configured", escape(pinned)));
    format!(
        "{why}, so {} answered instead. /model shows the models; /model auto stops asking {} first.",
        escape(&answered.provider),
        escape(pinned)
    )
}

/// `output`, finished with the turn's transcript `turn` (kept in the
/// history, by `origin`'s sender) and what its tools remembered and sent.
fn kept(mut output: TurnOutput, turn: Vec<ChatMessage>, origin: &Origin, tools: &ToolContext) -> TurnOutput {
    // The history keeps images by reference: a person's bytes stay in the
    // media store, and a tool's are shown in this turn only.
    let messages = turn.into_iter().map(without_image_bytes).collect();
    output.record = Some(TurnRecord {
        messages,
        at_ms: None,
        by: Some(origin.sender.clone()),
    });
    output.memory = tools.memory.writes();
    output.files = tools.outgoing.take();
    output
}

/// What the turn says when the approvals cannot be read.
fn approvals_unread(error: &impl std::fmt::Display) -> TurnOutput {
    TurnOutput {
        replies: vec![(
            ReplyKind::Failure,
            format!("I could not read the approvals: {}", escape(&error.to_string())),
        )],
        ..TurnOutput::default()
    }
}
