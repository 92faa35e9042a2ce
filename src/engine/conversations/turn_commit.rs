//! What a finished turn's output writes, in one transaction: its history
//! record, the summary's change, its replies and approval prompts, the
//! approvals it creates or settles, its memory and audit, the tokens it
//! used; and what must happen once that commit was attempted
//! ([`Followups`]). The tail that commits it is `ending`.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, MessageId, OutboundBody, TurnEnd};

use super::Conversations;
use super::history::{RecentHistory, Remembered};
use crate::engine::pipeline::{TurnOutput, TurnRecord};
use crate::safety::approvals::{Approval, Owed};
use crate::store::{ApprovalWrite, ByProvider, PendingOutbound, TurnCommit, UsageAdd};

/// The commit for a finished turn (of journal entry `seq`, if it answers a
/// message) that was given the turns in `recent`, and what it changes in
/// that copy: the history record it keeps, under its id (none if the record
/// could not be serialized, so the copy matches the store), and the
/// summary's change. Replies answer `answering`, if anything; the prompts
/// of approvals the turn asks for follow them.
pub(super) fn commit_of(
    cx: &Arc<Conversations>,
    recent: &RecentHistory,
    seq: Option<u64>,
    answering: Option<&MessageId>,
    mut output: TurnOutput,
) -> (TurnCommit, Remembered, Followups) {
    let Kept { bytes, id, record } = kept_record(cx, seq, output.record.take());
    let summary = output.summary.take().and_then(|change| {
        let write = recent.summary_write(change);
        if write.is_none() {
            tracing::error!(?seq, "a fold into the summary does not match the turns given; not kept");
        }
        write
    });
    let replies = replies_of(cx, answering, &mut output);
    let usage = UsageAdd {
        day: crate::engine::pipeline::usage_report::day_of(cx.clock.now_ms()),
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
        history_record: bytes,
        history_id: id,
        replies,
        memory: output.memory,
        approvals: writes,
        audit: output.audit,
        summary,
        tokens: TurnEnd {
            tokens_in: output.cost.tokens_in,
            tokens_out: output.cost.tokens_out,
        },
        usage: Some(usage),
        ..TurnCommit::default()
    };
    (commit, remembered, followups)
}

/// A turn's history record as it is kept; all none when there is no
/// record or it cannot be kept.
#[derive(Default)]
struct Kept {
    /// The record serialized, for the store.
    bytes: Option<Vec<u8>>,
    /// Its new history id.
    id: Option<u64>,
    /// The record under its id, for the worker's copy.
    record: Option<(u64, TurnRecord)>,
}

/// `record`, dated as it is committed (the time history search and
/// retention go by), serialized under a new history id.
fn kept_record(cx: &Arc<Conversations>, seq: Option<u64>, record: Option<TurnRecord>) -> Kept {
    let Some(mut record) = record else {
        return Kept::default();
    };
    record.at_ms = Some(record.at_ms.unwrap_or_else(|| cx.clock.now_ms()));
    let id = cx.store.history_id().map_err(|error| error.to_string());
    let bytes = serde_json::to_vec(&record).map_err(|error| error.to_string());
    match id.and_then(|id| bytes.map(|bytes| (id, bytes))) {
        Ok((id, bytes)) => Kept {
            bytes: Some(bytes),
            id: Some(id),
            record: Some((id, record)),
        },
        Err(error) => {
            tracing::error!(?seq, %error, "turn cannot be kept in the history");
            Kept::default()
        }
    }
}

/// The replies of `output`, in the order they go out: approvals decided,
/// files, texts, then the prompts of approvals asked for. All but the
/// decided ones answer `answering`.
fn replies_of(cx: &Arc<Conversations>, answering: Option<&MessageId>, output: &mut TurnOutput) -> Vec<PendingOutbound> {
    let reply = |body| PendingOutbound {
        drafts: Vec::new(),
        in_reply_to: answering.cloned(),
        body,
    };
    let mut replies: Vec<_> = std::mem::take(&mut output.decided)
        .into_iter()
        .map(|(token, prompt, text)| PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::ApprovalDecided { token, prompt, text },
        })
        .collect();
    replies.extend(
        std::mem::take(&mut output.files)
            .into_iter()
            .map(|file| reply(OutboundBody::File(file))),
    );
    replies.extend(
        std::mem::take(&mut output.replies)
            .into_iter()
            .map(|(kind, text)| reply(OutboundBody::Text { text, kind })),
    );
    replies.extend(output.requested.iter().map(|approval| {
        reply(OutboundBody::ApprovalPrompt {
            token: approval.token.clone(),
            action: approval.action(),
            text: cx.approvals.prompt_text(approval),
        })
    }));
    replies
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
    pub(super) handed_to: Option<ConversationKey>,
}

impl Followups {
    /// Conversations owed an approval's outcome are marked and woken.
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
