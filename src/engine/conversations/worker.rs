//! One conversation's worker: runs its turns one after another, each in
//! stages (plan, run, apply what it asked, end), and ends each the way
//! every turn ends (`ending.rs`): its writes in one transaction, then its
//! delivery. After each job it settles the conversation's decided approvals
//! (`settle.rs`), so those turns keep the conversation's order too, and
//! sends the reminders of approvals about to time out (`remind.rs`).
//!
//! A turn that panics or times out is rolled back by construction — the
//! pipeline writes nothing itself — and answered with an apology carrying an
//! error id that is also logged. Other conversations never notice.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{ConversationKey, ReplyKind, UserId};
use tokio::sync::mpsc;

use super::drafting::{Drafter, ShownText};
use super::ending::{Answering, Ending, Extras, Said};
use super::failure::{TurnFailed, guarded};
use super::history::RecentHistory;
use super::relay::Relaying;
use super::stop::Running;
use super::typing::with_typing;
use super::{Conversations, Counted};
use super::{InWorker, Job};
use crate::engine::pipeline::commands::{ChatChange, View};
use crate::engine::pipeline::compaction::Earlier;
use crate::engine::pipeline::{Finished, FinishedRounds, TurnOutput, TurnRecord, TurnWatch};
use crate::model::llm::{ChatMessage, TextSink};
use crate::safety::approvals::Person;
use crate::store::{HandoffWrite, JournalEntry, TurnCommit};

pub async fn run(cx: Arc<Conversations>, key: ConversationKey, generation: u64, mut jobs: mpsc::Receiver<Job>) {
    let idle = Duration::from_secs(cx.settings.idle_worker_s);
    let mut recent = RecentHistory::new(cx.settings.history_turns, cx.pipeline().compacting());
    loop {
        let job = tokio::select! {
            biased;
            _ = cx.lifecycle.draining().cancelled() => return,
            job = jobs.recv() => match job {
                Some(job) => job,
                None => return,
            },
            _ = tokio::time::sleep(idle) => {
                // An outcome owed whose wake-up found the queue full is
                // settled here rather than left to the next message.
                super::settle::settle_approvals(&cx, &key, &mut recent).await;
                super::handoff::carry_over(&cx, &key, &mut recent).await;
                super::remind::remind_of_approvals(&cx, &key).await;
                if cx.router().retire(&key, generation, &mut jobs) {
                    tracing::debug!(conversation = %key, "idle worker stopped");
                    return;
                }
                continue;
            }
        };
        handle(&cx, &key, &mut recent, job).await;
    }
}

async fn handle(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, job: Job) {
    // Whatever commits delivers right after, so no job delivers here; and
    // whoever wakes the worker has started a delivery already, outside it.
    match job {
        Job::Turn(seq) => turns_up_to(cx, key, recent, seq).await,
        Job::Wake => {}
        Job::Errand(errand) => errand.run(&mut InWorker { cx, key, recent }).await,
    }
    super::settle::settle_approvals(cx, key, recent).await;
    super::handoff::carry_over(cx, key, recent).await;
    super::remind::remind_of_approvals(cx, key).await;
}

/// Runs, oldest first, every pending message of the conversation up to
/// `seq`. Whatever queued the job — the intake, or recovery at start with one
/// job for a whole backlog — messages are answered in the order accepted, and
/// a message already answered is not run again.
async fn turns_up_to(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, seq: u64) {
    let pending = match cx.store.pending_for(key) {
        Ok(pending) => pending,
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot list pending messages");
            return;
        }
    };
    for next in pending.into_iter().take_while(|&next| next <= seq) {
        if cx.store.is_poisoned() || cx.lifecycle.is_draining() {
            break;
        }
        // Each answer goes out as soon as it is committed, not after the
        // whole backlog (recovery after a restart queues one job for all).
        turn(cx, key, recent, next).await;
    }
}

/// A message's turn, in stages: [`plan`] it, [`run_turn`] it, [`apply`] what it
/// asked of the conversation, and end it (see `ending`).
async fn turn(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, seq: u64) {
    let started = tokio::time::Instant::now();
    let Some(entry) = entry_of(cx, key, seq).await else {
        return;
    };
    let Some(mut plan) = plan(cx, key, recent, &entry).await else {
        return;
    };
    let outcome = run_turn(cx, key, recent, &entry, &mut plan).await;
    let (said, asked) = apply(cx, key, recent, &entry, outcome);
    let ending = Ending {
        answering: Answering::Message(&entry),
        said,
        extras: Extras {
            relaying: plan.relaying.take(),
            handoff: asked.handoff,
            fresh_start: asked.fresh_start,
            drafted: plan.shown.take(),
            stopped: plan.stopped,
            started: Some(started),
            running: Some(plan.running),
            ..Extras::default()
        },
    };
    // What could not be committed was logged; the message stays pending.
    let _ = ending.finish(cx, key, recent).await;
}

/// The journal entry `seq`, pending in `key`. Pending without a journal
/// entry cannot be answered: cleared rather than tripped over at every start.
async fn entry_of(cx: &Arc<Conversations>, key: &ConversationKey, seq: u64) -> Option<JournalEntry> {
    match cx.store.journal_entry(seq) {
        Ok(Some(entry)) => Some(entry),
        Ok(None) => {
            tracing::error!(conversation = %key, seq, "pending message has no journal entry; dropped");
            let clear = TurnCommit {
                journal_seq: Some(seq),
                ..TurnCommit::default()
            };
            if let Err(error) = cx.store.commit_turn_durably(key, clear).await {
                tracing::error!(conversation = %key, seq, %error, "cannot clear the pending marker");
            }
            None
        }
        Err(error) => {
            tracing::error!(conversation = %key, seq, %error, "cannot read journal entry");
            None
        }
    }
}

/// A message's turn, planned: how it is relayed, shown and stopped.
struct Plan {
    /// In a bridged group: the copies for the other chats.
    relaying: Option<Relaying>,
    drafter: Option<Drafter>,
    /// What the pipeline writes its text to, for the drafter.
    sink: Option<Arc<dyn TextSink>>,
    /// What the draft showed, when there is one.
    shown: Option<ShownText>,
    /// The turn's registration, so a `/stop` finds it.
    running: Running,
    /// The rounds of tool calls it finished, kept when it is stopped.
    finished: Arc<FinishedRounds>,
    /// Stopped, before the restart or while it ran.
    stopped: bool,
}

/// Plans `entry`'s turn; none when the message is only relayed (which is
/// done here).
async fn plan(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    entry: &JournalEntry,
) -> Option<Plan> {
    // In a bridged group: relayed, and maybe a turn too.
    let mut relaying = super::relay::plan(cx, key, &entry.inbound).await;
    if let Some(relaying) = relaying.take_if(|relaying| relaying.only) {
        relay_only(cx, key, recent, entry, relaying).await;
        return None;
    }
    let (drafter, sink) = drafter_for(cx, entry);
    let shown = drafter.as_ref().map(Drafter::shown_text);
    let running = cx.running.start(key, entry.seq);
    // Stopped, and the daemon went down before the turn committed: ended
    // as stopped, not run again. What it had finished went with the crash.
    let stopped = cx.store.was_stopped(entry.seq).unwrap_or_else(|error| {
        tracing::error!(conversation = %key, seq = entry.seq, %error, "cannot read whether a turn was stopped");
        false
    });
    // A conversation begun elsewhere keeps what came before first.
    super::seed::seed(cx, key, recent, &entry.inbound).await;
    Some(Plan {
        relaying,
        drafter,
        sink,
        shown,
        running,
        finished: Arc::new(FinishedRounds::default()),
        stopped,
    })
}

/// Commits `entry`'s copies for the other chats, and nothing else, then
/// delivers them: a turn that said nothing.
async fn relay_only(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    entry: &JournalEntry,
    relaying: Relaying,
) {
    let ending = Ending {
        answering: Answering::Message(entry),
        said: Said::Nothing,
        extras: Extras {
            relaying: Some(relaying),
            ..Extras::default()
        },
    };
    if let Err(error) = ending.finish(cx, key, recent).await {
        // Still pending: relayed by the next start.
        tracing::error!(conversation = %key, seq = entry.seq, %error, "cannot commit a relayed message");
    }
}

/// Runs `entry`'s turn with the conversation's history, showing "typing"
/// and the draft, until it ends or is stopped; a stopped turn keeps what it
/// had finished.
async fn run_turn(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    entry: &JournalEntry,
    plan: &mut Plan,
) -> Result<TurnOutput, TurnFailed> {
    let seq = entry.seq;
    // The settings come with the worker's copy of the history: read once,
    // kept up to date when a turn changes them.
    let (history, settings) = recent.load_with_settings(&cx.store, key).map_err(TurnFailed::History)?;
    if plan.stopped {
        tracing::info!(conversation = %key, seq, "turn stopped before the restart; not run again");
        cx.running.stopped_before_restart(key);
        return Ok(stopped_output(None, &entry.inbound.sender.id));
    }
    let watch = TurnWatch {
        sink: plan.sink.take(),
        finished: Some(plan.finished.clone()),
    };
    let pipeline = run_pipeline(cx, entry, history, settings.pinned_model.as_deref(), watch);
    let shown = Drafter::alongside(plan.drafter.take(), pipeline);
    if let Some(outcome) = plan.running.run(with_typing(cx, key, shown)).await {
        return outcome;
    }
    // Stopped: its finished rounds are kept; the `/stop` says so.
    let kept = plan.finished.take();
    let calls = kept.as_ref().map_or(0, |kept| kept.calls);
    tracing::info!(conversation = %key, seq, kept_calls = calls, "turn stopped");
    if kept.is_some() {
        cx.running.kept(key, calls);
    }
    plan.stopped = true;
    Ok(stopped_output(kept, &entry.inbound.sender.id))
}

/// What a turn asked of its conversation beside its answer.
#[derive(Default)]
struct Asked {
    /// The hand-off it asks for.
    handoff: Option<HandoffWrite>,
    /// It started the chat afresh.
    fresh_start: bool,
}

/// Does what the turn asked of the conversation (a hand-off, `/continue`,
/// a change of its settings), answering it in the turn's replies, and
/// counts the turn.
fn apply(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    entry: &JournalEntry,
    outcome: Result<TurnOutput, TurnFailed>,
) -> (Said, Asked) {
    let mut output = match outcome {
        Ok(output) => output,
        Err(failure) => {
            cx.count(Counted::TurnFailure);
            return (Said::Failed(failure), Asked::default());
        }
    };
    let mut asked = Asked::default();
    if let Some(ask) = output.channels.take() {
        let answered = super::handoff::answer(cx, key, &entry.inbound.sender.id, &ask);
        output.replies = vec![(ReplyKind::Notice, answered.text)];
        output.record = answered.record;
        asked.handoff = answered.asked;
    }
    if let Some(change) = output.chat.take() {
        asked.fresh_start = change == ChatChange::FreshStart;
        match super::chat_control::apply(cx, key, &change) {
            Ok(settings) => recent.settings_stored(settings),
            Err(error) => {
                tracing::error!(conversation = %key, %error, "cannot store the conversation's settings");
                output.replies = vec![(
                    ReplyKind::Failure,
                    format!(
                        "I could not store that: {}",
                        passepartout_gateway::markup::escape(&error.to_string())
                    ),
                )];
            }
        }
    }
    cx.count(Counted::Turn);
    (Said::Output(Box::new(output)), asked)
}

/// A drafter for `entry`'s turn and the sink its pipeline writes to, when
/// its gateway shows drafts.
fn drafter_for(cx: &Arc<Conversations>, entry: &JournalEntry) -> (Option<Drafter>, Option<Arc<dyn TextSink>>) {
    let inbound = &entry.inbound;
    let Some(gateway) = cx.draft_half(&inbound.conversation.gateway) else {
        return (None, None);
    };
    let (drafter, sink) = Drafter::new(
        gateway.clone(),
        cx.store.clone(),
        inbound.conversation.clone(),
        entry.seq,
        inbound.message_id.clone(),
    );
    (Some(drafter), Some(sink))
}

/// What a stopped turn commits: the person's message and the rounds of
/// tool calls it finished, if any, closed by a line saying it was stopped
/// there; nothing when not even the message was read (stopped before a
/// restart).
fn stopped_output(kept: Option<Finished>, by: &UserId) -> TurnOutput {
    let Some(kept) = kept else {
        return TurnOutput::default();
    };
    let mut messages = kept.messages;
    messages.push(ChatMessage::assistant(if kept.calls == 0 {
        "(Stopped here by the person before I answered.)"
    } else {
        "(Stopped here by the person; the tool calls above ran, nothing after them.)"
    }));
    TurnOutput {
        record: Some(TurnRecord {
            messages,
            at_ms: None,
            by: Some(by.clone()),
        }),
        audit: kept.audit,
        memory: kept.memory,
        ..TurnOutput::default()
    }
}

/// The answer to `/stop`, by whether it stopped a turn and how many of
/// that turn's tool calls were kept.
fn stopped_text(stopped: Option<Option<usize>>) -> String {
    match stopped {
        None => "Nothing was running here to stop.".to_owned(),
        Some(None) => "Stopped. Nothing of that turn was kept: its model call was abandoned and any command it ran \
                       was killed; ask again when you want it."
            .to_owned(),
        Some(Some(0)) => "Stopped. Your message is kept, but no answer to it: its model call was abandoned and any \
                          command it ran was killed; ask again when you want one."
            .to_owned(),
        Some(Some(calls)) => format!(
            "Stopped. The {calls} tool call{} it had finished {} kept, so I know what was done; the step under way \
             was abandoned and any command still running was killed. Ask again to go on.",
            if calls == 1 { "" } else { "s" },
            if calls == 1 { "is" } else { "are" },
        ),
    }
}

/// What `/status` and `/loops` say to someone who may not approve here.
const NOT_FOR_EVERYONE: &str = "The assistant's status and background loops are shown only to someone who \
                                may approve here (and to the owner on the dashboard or with `passepartout \
                                status`); /usage shows what this conversation used.";

/// Runs the pipeline under the turn timeout, catching panics.
async fn run_pipeline(
    cx: &Arc<Conversations>,
    entry: &JournalEntry,
    earlier: Earlier<'_>,
    pinned: Option<&str>,
    watch: TurnWatch,
) -> Result<TurnOutput, TurnFailed> {
    let key = &entry.inbound.conversation;
    // The daemon-wide views are for those who may approve here; anyone
    // else sees what is their own.
    let sees_all = cx.approvals.approves_in(&Person::of(&entry.inbound), key);
    let view = |view: View| match view {
        View::Usage if sees_all => super::chat_control::usage_text(cx, key),
        View::Usage => super::chat_control::own_usage_text(cx, key),
        View::Stopped => stopped_text(cx.running.take_stopped(key)),
        View::Help => crate::engine::pipeline::commands::help(&cx.channels().words()),
        View::Status | View::Loops if !sees_all => NOT_FOR_EVERYONE.to_owned(),
        other => cx.show(other, cx.approvals.surface_of(key)),
    };
    let memory = cx.memory_of(
        &key.gateway,
        &entry.inbound.sender.id,
        &entry.inbound.sender.aliases,
        key,
    );
    // On the heap: the pipeline's future is large (its model calls, tools
    // and votes), and every future awaiting it up to the worker's task
    // would otherwise make room for it on the thread's stack.
    let pipeline = cx.pipeline();
    let turn = Box::pin(pipeline.run(&entry.inbound, earlier, pinned, memory, view, watch));
    guarded(cx, key, turn).await
}
