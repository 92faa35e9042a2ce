//! One conversation's worker: runs its turns one after another, commits each
//! turn's writes in one transaction, then delivers its outbox. After each
//! job it settles the conversation's decided approvals (`settle.rs`), so
//! those turns keep the conversation's order too, and sends the reminders
//! of approvals about to time out (`remind.rs`).
//!
//! A turn that panics or times out is rolled back by construction — the
//! pipeline writes nothing itself — and answered with an apology carrying an
//! error id that is also logged. Other conversations never notice.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use passepartout_gateway::{ConversationKey, MessageId, OutboundBody, ReplyKind, TurnEnd, UserId};
use tokio::sync::mpsc;

use super::drafting::{self, Drafter};
use super::history::{RecentHistory, Remembered};
use super::{Conversations, Counted};
use super::{InWorker, Job, delivery};
use crate::approvals::{Approval, Owed, Person};
use crate::llm::{ChatMessage, TextSink};
use crate::pipeline::commands::{ChatChange, View};
use crate::pipeline::compaction::Earlier;
use crate::pipeline::{Finished, FinishedRounds, TurnOutput, TurnRecord, TurnWatch};
use crate::store::{ApprovalWrite, ByProvider, HandoffWrite, JournalEntry, PendingOutbound, TurnCommit, UsageAdd};

/// How long a turn runs before the conversation shows "typing".
const TYPING_AFTER: Duration = Duration::from_millis(300);
/// How often the typing indicator is renewed while a turn runs.
const TYPING_EVERY: Duration = Duration::from_secs(4);

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
        turn(cx, key, recent, next).await;
        // Each answer goes out as soon as it is committed, not after the
        // whole backlog (recovery after a restart queues one job for all).
        // A bridged chat's outbox also takes the other chats' copies, whose
        // delivery may wait minutes on the platform's pace: the worker does
        // not wait with it.
        if cx.bridges().of(key).is_some() {
            cx.deliver_waiting(key);
        } else {
            delivery::deliver(cx, key).await;
        }
    }
}

async fn turn(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, seq: u64) {
    let started = tokio::time::Instant::now();
    let entry = match cx.store.journal_entry(seq) {
        Ok(Some(entry)) => entry,
        Ok(None) => {
            // Pending without a journal entry cannot be answered: clear it
            // rather than trip over it at every start.
            tracing::error!(conversation = %key, seq, "pending message has no journal entry; dropped");
            let clear = TurnCommit {
                journal_seq: Some(seq),
                ..TurnCommit::default()
            };
            if let Err(error) = cx.store.commit_turn_durably(key, clear).await {
                tracing::error!(conversation = %key, seq, %error, "cannot clear the pending marker");
            }
            return;
        }
        Err(error) => {
            tracing::error!(conversation = %key, seq, %error, "cannot read journal entry");
            return;
        }
    };
    // In a bridged group: relayed, and maybe a turn too.
    let mut relaying = super::relay::plan(cx, key, &entry.inbound).await;
    if let Some(relaying) = relaying.take_if(|relaying| relaying.only) {
        super::relay::relay_only(cx, key, &entry, relaying).await;
        return;
    }
    let (drafter, sink) = drafter_for(cx, &entry);
    let drafted = drafter.is_some();
    let shown_text = drafter.as_ref().map(Drafter::shown_text).unwrap_or_default();
    let finished = Arc::new(FinishedRounds::default());
    let watch = TurnWatch {
        sink,
        finished: Some(finished.clone()),
    };
    let running = cx.running.start(key, seq);
    // Stopped, and the daemon went down before the turn committed: ended
    // as stopped, not run again. What it had finished went with the crash.
    let mut stopped = cx.store.was_stopped(seq).unwrap_or_else(|error| {
        tracing::error!(conversation = %key, seq, %error, "cannot read whether a turn was stopped");
        false
    });
    // A conversation begun elsewhere keeps what came before first.
    super::seed::seed(cx, key, recent, &entry.inbound).await;
    // The settings come with the worker's copy of the history: read once,
    // kept up to date when a turn changes them.
    let outcome = match recent.load_with_settings(&cx.store, key) {
        Ok(_) if stopped => {
            tracing::info!(conversation = %key, seq, "turn stopped before the restart; not run again");
            cx.running.stopped_before_restart(key);
            Ok(stopped_output(None, &entry.inbound.sender.id))
        }
        Ok((history, settings)) => match running
            .run(with_typing(
                cx,
                key,
                Drafter::alongside(
                    drafter,
                    run_pipeline(cx, &entry, history, settings.pinned_model.as_deref(), watch),
                ),
            ))
            .await
        {
            Some(outcome) => outcome,
            None => {
                // Stopped: its finished rounds are kept; the `/stop` says so.
                let kept = finished.take();
                let calls = kept.as_ref().map_or(0, |kept| kept.calls);
                tracing::info!(conversation = %key, seq, kept_calls = calls, "turn stopped");
                if kept.is_some() {
                    cx.running.kept(key, calls);
                }
                stopped = true;
                Ok(stopped_output(kept, &entry.inbound.sender.id))
            }
        },
        Err(error) => {
            let id = error_id();
            tracing::error!(conversation = %key, error_id = %id, %error, "cannot read history");
            Err(format!("I could not read this conversation's history (error id {id})."))
        }
    };
    let mut fresh_start = false;
    let mut handoff = None;
    let (mut commit, remembered, followups) = match outcome {
        Ok(mut output) => {
            if let Some(ask) = output.channels.take() {
                let answered = super::handoff::answer(cx, key, &entry.inbound.sender.id, &ask);
                output.replies = vec![(ReplyKind::Notice, answered.text)];
                output.record = answered.record;
                handoff = answered.asked;
            }
            if let Some(change) = output.chat.take() {
                fresh_start = change == ChatChange::FreshStart;
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
            let (mut commit, remembered, mut followups) =
                commit_of(cx, recent, Some(entry.seq), Some(&entry.inbound.message_id), output);
            if let Some(HandoffWrite::Ask { to, .. }) = &handoff {
                followups.handed_to = Some(to.clone());
            }
            commit.handoff = handoff;
            (commit, Some(remembered), followups)
        }
        Err(failure) => {
            cx.count(Counted::TurnFailure);
            (apology(&entry, &failure), None, Followups::default())
        }
    };
    // Read back rather than taken from the drafter: a stopped turn's
    // drafter never finished, but what it showed is recorded.
    let drafts = if drafted { drafts_of(cx, key, seq) } else { Vec::new() };
    let hand_over = |replies: &mut Vec<PendingOutbound>, drafts: Vec<MessageId>| {
        if stopped {
            drafting::hand_over_stopped(replies, drafts, shown_text.get(), &entry.inbound.message_id);
        } else {
            drafting::hand_over(replies, drafts);
        }
    };
    hand_over(&mut commit.replies, drafts.clone());
    let person_relayed = relaying
        .as_ref()
        .map(|relaying| relaying.person().to_vec())
        .unwrap_or_default();
    if let Some(relaying) = relaying {
        commit.relayed = relaying.with_answers(cx, key, &commit.replies);
    }
    // Durable before delivery: a reply a person has seen is never redone.
    let committed = cx.store.commit_turn_durably(key, commit).await;
    // Timed here, before anything is delivered, so whoever reads the reply
    // finds the turn already counted.
    cx.time_turn(started.elapsed());
    followups.run(cx, key, committed.is_ok());
    match (&committed, remembered) {
        // The copy was loaded without the new mark.
        (Ok(_), Some(_)) if fresh_start => recent.invalidate(),
        (Ok(_), Some(remembered)) => recent.committed(remembered),
        (Ok(_), None) => {}
        (Err(_), _) => recent.invalidate(),
    }
    match committed {
        Ok(committed) => delivery::deliver_elsewhere(cx, key, &committed),
        Err(error) => {
            if cx.store.is_poisoned() {
                tracing::error!(conversation = %key, seq, %error, "turn not committed: the store cannot flush");
                return;
            }
            let id = error_id();
            tracing::error!(conversation = %key, seq, error_id = %id, %error, "turn commit failed");
            let mut fallback = apology(&entry, &format!("the store refused the turn (error id {id})"));
            hand_over(&mut fallback.replies, drafts);
            // What the person said still reaches the bridge's other chats.
            fallback.relayed = person_relayed;
            match cx.store.commit_turn_durably(key, fallback).await {
                Ok(committed) => delivery::deliver_elsewhere(cx, key, &committed),
                Err(error) => {
                    tracing::error!(conversation = %key, seq, %error, "apology commit failed; the message stays pending");
                    return;
                }
            }
        }
    }
    if drafted && let Err(error) = cx.store.forget_draft(seq) {
        // Swept at the next start.
        tracing::debug!(conversation = %key, seq, %error, "cannot forget a handed-over draft");
    }
    if stopped && let Err(error) = cx.store.forget_stop(seq) {
        // Swept at the next start.
        tracing::debug!(conversation = %key, seq, %error, "cannot forget a committed turn's stop");
    }
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

/// The messages the draft of journal entry `seq` occupies.
fn drafts_of(cx: &Arc<Conversations>, key: &ConversationKey, seq: u64) -> Vec<MessageId> {
    cx.store.draft_messages(seq).unwrap_or_else(|error| {
        tracing::error!(conversation = %key, seq, %error, "cannot read where a draft is shown");
        Vec::new()
    })
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

/// Shows "typing" in the conversation while `turn` runs, once it has taken
/// longer than [`TYPING_AFTER`], renewed every [`TYPING_EVERY`] (platform
/// indicators fade after about five seconds). A quick answer needs none.
pub(super) async fn with_typing<T>(cx: &Arc<Conversations>, key: &ConversationKey, turn: impl Future<Output = T>) -> T {
    let Some(gateway) = cx.deliver_half(&key.gateway) else {
        return turn.await;
    };
    tokio::pin!(turn);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + TYPING_AFTER, TYPING_EVERY);
    loop {
        tokio::select! {
            output = &mut turn => return output,
            _ = ticker.tick() => {
                // Best effort, and never allowed to hold up the turn for long.
                match tokio::time::timeout(TYPING_EVERY / 2, gateway.typing(key)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(conversation = %key, %error, "typing indicator failed"),
                    Err(_) => tracing::debug!(conversation = %key, "typing indicator timed out"),
                }
            }
        }
    }
}

/// What `/status` and `/loops` say to someone who may not approve here.
const NOT_FOR_EVERYONE: &str = "The assistant's status and background loops are shown only to someone who \
                                may approve here (and to the owner on the dashboard or with `passepartout \
                                status`); /usage shows what this conversation used.";

/// Runs the pipeline under the turn timeout, catching panics. `Err` carries
/// the sentence for the user, with the logged error id.
async fn run_pipeline(
    cx: &Arc<Conversations>,
    entry: &JournalEntry,
    earlier: Earlier<'_>,
    pinned: Option<&str>,
    watch: TurnWatch,
) -> Result<TurnOutput, String> {
    let key = &entry.inbound.conversation;
    // The daemon-wide views are for those who may approve here; anyone
    // else sees what is their own.
    let sees_all = cx.approvals.approves_in(&Person::of(&entry.inbound), key);
    let view = |view: View| match view {
        View::Usage if sees_all => super::chat_control::usage_text(cx, key),
        View::Usage => super::chat_control::own_usage_text(cx, key),
        View::Stopped => stopped_text(cx.running.take_stopped(key)),
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

/// Runs `turn` under the turn timeout, catching panics. `Err` carries the
/// sentence for the user, with the logged error id.
pub(super) async fn guarded(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    turn: impl Future<Output = TurnOutput>,
) -> Result<TurnOutput, String> {
    let limit = Duration::from_secs(cx.settings.turn_timeout_s);
    let turn = AssertUnwindSafe(turn).catch_unwind();
    match tokio::time::timeout(limit, turn).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(panic)) => {
            let id = error_id();
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(conversation = %key, error_id = %id, panic = %message, "turn panicked; rolled back");
            Err(format!(
                "Something went wrong on my side (error id {id}). Nothing from that attempt was kept."
            ))
        }
        Err(_) => {
            let id = error_id();
            tracing::error!(conversation = %key, error_id = %id, limit_s = limit.as_secs(), "turn timed out");
            Err(format!(
                "That took longer than {} s, so I stopped (error id {id}). Nothing from that attempt was kept.",
                limit.as_secs()
            ))
        }
    }
}

/// The commit for a finished turn (of journal entry `seq`, if it answers a
/// message) that was given the turns in `recent`, and what it changes in
/// that copy: the history record it keeps, under its id (none if the record
/// could not be serialized, so the copy matches the store), and the
/// summary's change. Replies answer `answering`, if anything; the prompts
/// of approvals the turn asks for follow them.
/// Conversations owed an approval's outcome are marked and woken.
pub(super) fn commit_of(
    cx: &Arc<Conversations>,
    recent: &RecentHistory,
    seq: Option<u64>,
    answering: Option<&MessageId>,
    output: TurnOutput,
) -> (TurnCommit, Remembered, Followups) {
    // Dated here, as it is committed: the time history search and retention go by.
    let dated = output.record.map(|mut record| {
        record.at_ms = Some(record.at_ms.unwrap_or_else(|| cx.clock.now_ms()));
        record
    });
    let kept = dated.map(|record| {
        let id = cx.store.history_id().map_err(|error| error.to_string());
        let bytes = serde_json::to_vec(&record).map_err(|error| error.to_string());
        (id.and_then(|id| bytes.map(|bytes| (id, bytes))), record)
    });
    let (history_record, history_id, record) = match kept {
        Some((Ok((id, bytes)), record)) => (Some(bytes), Some(id), Some((id, record))),
        Some((Err(error), _)) => {
            tracing::error!(?seq, %error, "turn cannot be kept in the history");
            (None, None, None)
        }
        None => (None, None, None),
    };
    let summary = output.summary.and_then(|change| {
        let write = recent.summary_write(change);
        if write.is_none() {
            tracing::error!(?seq, "a fold into the summary does not match the turns given; not kept");
        }
        write
    });
    let approvals = &cx.approvals;
    let reply = |body| PendingOutbound {
        drafts: Vec::new(),
        in_reply_to: answering.cloned(),
        body,
    };
    let mut replies: Vec<_> = output
        .decided
        .into_iter()
        .map(|(token, prompt, text)| PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::ApprovalDecided { token, prompt, text },
        })
        .collect();
    replies.extend(output.files.into_iter().map(|file| reply(OutboundBody::File(file))));
    replies.extend(
        output
            .replies
            .into_iter()
            .map(|(kind, text)| reply(OutboundBody::Text { text, kind })),
    );
    replies.extend(output.requested.iter().map(|approval| {
        reply(OutboundBody::ApprovalPrompt {
            token: approval.token.clone(),
            action: approval.action(),
            text: approvals.prompt_text(approval),
        })
    }));
    let tokens = TurnEnd {
        tokens_in: output.cost.tokens_in,
        tokens_out: output.cost.tokens_out,
    };
    let usage = UsageAdd {
        day: crate::pipeline::usage_report::day_of(cx.clock.now_ms()),
        used: output.cost.by_provider,
    };
    let followups = Followups {
        created: output.requested.clone(),
        settle: output.settle,
        usage: usage.used.clone(),
        handed_to: None,
    };
    let mut writes: Vec<ApprovalWrite> = output
        .requested
        .into_iter()
        .map(|approval| ApprovalWrite::Create(Box::new(approval)))
        .collect();
    writes.extend(
        output
            .settled
            .into_iter()
            .map(|(token, run)| ApprovalWrite::Settle { token, run }),
    );
    let remembered = Remembered {
        forget: output.forget,
        summary: summary.clone(),
        record,
    };
    let commit = TurnCommit {
        journal_seq: seq,
        forget_history: output.forget,
        history_record,
        history_id,
        replies,
        memory: output.memory,
        approvals: writes,
        audit: output.audit,
        loop_record: None,
        summary,
        handoff: None,
        follows: None,
        relayed: Vec::new(),
        tokens,
        usage: Some(usage),
    };
    (commit, remembered, followups)
}

/// What must happen once a turn's commit was attempted.
#[derive(Default)]
pub(super) struct Followups {
    /// Approvals the turn asked for: their deadlines are armed once they
    /// are in the store.
    created: Vec<Approval>,
    /// Outcomes owed (decided by this turn's answer, which stands whether
    /// or not the turn itself committed).
    settle: Vec<Owed>,
    /// The tokens the turn used: they were used whether or not it
    /// committed, and go in with the commit when it does.
    usage: ByProvider,
    /// The conversation the turn handed over to: woken once it is
    /// committed, to carry the turns over.
    handed_to: Option<ConversationKey>,
}

impl Followups {
    pub(super) fn run(self, cx: &Arc<Conversations>, key: &ConversationKey, committed: bool) {
        if !committed {
            super::chat_control::record_usage(cx, key, &self.usage);
        }
        let approvals = &cx.approvals;
        if committed && !self.created.is_empty() {
            approvals.created(&self.created);
        }
        for owed in self.settle {
            let conversation = owed.conversation.clone();
            approvals.mark_unsettled(owed);
            cx.nudge(&conversation);
        }
        if let Some(to) = self.handed_to.filter(|_| committed) {
            cx.nudge(&to);
        }
    }
}

fn apology(entry: &JournalEntry, text: &str) -> TurnCommit {
    TurnCommit {
        journal_seq: Some(entry.seq),
        replies: vec![PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: Some(entry.inbound.message_id.clone()),
            body: OutboundBody::Text {
                text: text.to_owned(),
                kind: ReplyKind::Failure,
            },
        }],
        ..TurnCommit::default()
    }
}

/// A short id that ties an apology to its log line.
pub(super) fn error_id() -> String {
    format!("E{:06X}", rand::random::<u32>() & 0xFF_FFFF)
}
