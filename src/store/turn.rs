//! A turn's writes, committed in one multi-tree transaction: the journal entry
//! and its `pending` marker go, the replies enter the outbox, the turn enters
//! the history, the memory facts it remembered or forgot are written, the
//! approvals it asked for or settled change, the tools it ran are audited,
//! a loop's iteration stores its loop's next run, the conversation's
//! running summary changes with the turn that folded turns into it, a
//! hand-off to another conversation is asked for or carried over, and
//! the tokens the turn used are added to the conversation's usage of the day.
//! A turn that fails before committing leaves the store as it was, so the
//! message is still pending and nothing of the failed turn is visible.

use passepartout_gateway::{ConversationKey, MessageId, Outbound, OutboundBody, TurnEnd};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use super::approvals::{self, ApprovalWrite};
use super::error::StoreError;
use super::handoffs::HandoffWrite;
use super::loops::LoopRecordWrite;
use super::memory::MemoryWrite;
use super::outbox::{OutboxEntry, Relay};
use super::records::AuditEvent;
use super::summary::SummaryWrite;
use super::usage::UsageAdd;
use super::{Store, keys};

/// A reply produced by a turn, before it has an id.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingOutbound {
    pub in_reply_to: Option<MessageId>,
    pub body: OutboundBody,
    /// The messages of a draft the reply takes over (see `drafts.rs`).
    pub drafts: Vec<MessageId>,
}

/// Where the replies of a turn nobody is waiting for go: the private chat
/// its person chose, with their number, so that another of their chats can
/// take what that one's gateway cannot deliver. Approval prompts and the
/// edits of decided ones stay where they were asked: answers to them are
/// read there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Following {
    pub person: u64,
    pub to: ConversationKey,
}

impl Following {
    /// Whether a reply with `body` follows the person.
    fn takes(body: &OutboundBody) -> bool {
        matches!(body, OutboundBody::Text { .. } | OutboundBody::File(_))
    }
}

/// A message for another chat of a bridge.
#[derive(Clone, Debug, PartialEq)]
pub struct Relayed {
    pub to: ConversationKey,
    pub body: OutboundBody,
    pub relay: Relay,
}

/// Where a turn's relayed messages start among its outbox keys, after its
/// replies.
const RELAYED_FROM: u64 = 1 << 20;

/// Everything one turn writes.
#[derive(Clone, Debug, Default)]
pub struct TurnCommit {
    /// The journal entry this turn processed; it stops being pending.
    pub journal_seq: Option<u64>,
    /// Delete the conversation's history first (`/forget`).
    pub forget_history: bool,
    /// The turn's history record, already serialized, if it is to be kept.
    pub history_record: Option<Vec<u8>>,
    /// The id the record is kept under ([`Store::history_id`]), when the
    /// caller needs to know it; a fresh one when `None`.
    pub history_id: Option<u64>,
    pub replies: Vec<PendingOutbound>,
    /// Facts remembered and forgotten during the turn.
    pub memory: Vec<MemoryWrite>,
    /// Approvals asked for or settled by the turn.
    pub approvals: Vec<ApprovalWrite>,
    /// Tool calls that ran during the turn.
    pub audit: Vec<AuditEvent>,
    /// A loop's iteration: its loop's record with the next run.
    pub loop_record: Option<LoopRecordWrite>,
    /// The conversation's running summary, when the turn changed it.
    /// `forget_history` deletes it too.
    pub summary: Option<SummaryWrite>,
    /// A hand-off the turn asked for, or carried over.
    pub handoff: Option<HandoffWrite>,
    /// The linked person what the turn says follows, when it came unasked
    /// (a loop's iteration, the outcome of background work).
    pub follows: Option<Following>,
    /// Messages for the other chats of a bridge: the person's message the
    /// turn processed, and the assistant's answers, relayed.
    pub relayed: Vec<Relayed>,
    /// What the turn's model calls used, told with its last reply
    /// ([`Outbound::turn_end`]).
    pub tokens: TurnEnd,
    /// The same by provider, added to the conversation's usage of its day.
    pub usage: Option<UsageAdd>,
}

/// A commit turned into keys and values, ready for a transaction.
pub(super) struct Prepared {
    journal_seq: Option<u64>,
    pending_key: Option<Vec<u8>>,
    entries: Vec<OutboxEntry>,
    values: Vec<Vec<u8>>,
    forget: Vec<sled::IVec>,
    history: Option<(Vec<u8>, Vec<u8>)>,
    memory: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    approvals: Vec<ApprovalWrite>,
    audit: Vec<AuditEvent>,
    loop_record: Option<LoopRecordWrite>,
    /// The summary's key, and its new value (`None`: delete).
    summary: Option<(Vec<u8>, Option<Vec<u8>>)>,
    handoff: Option<HandoffWrite>,
    /// The usage record's key, and what is added to it.
    usage: Option<(Vec<u8>, UsageAdd)>,
}

impl Prepared {
    /// Whether the commit writes more than the trees every turn writes.
    fn is_wide(&self) -> bool {
        !self.approvals.is_empty()
            || !self.audit.is_empty()
            || self.loop_record.is_some()
            || self.summary.is_some()
            || self.handoff.is_some()
    }
}

/// A turn's outbox entries, in order, and their encoded values.
struct Outgoing {
    entries: Vec<OutboxEntry>,
    values: Vec<Vec<u8>>,
}

impl Outgoing {
    /// Adds the turn's `replies` in `conversation`, their ids counted from
    /// `base`; those that follow the person (`follows`) go to their chat,
    /// and the last carries the turn's `tokens`.
    fn replies(
        &mut self,
        conversation: &ConversationKey,
        base: u64,
        replies: Vec<PendingOutbound>,
        follows: Option<&Following>,
        tokens: TurnEnd,
        journal_seq: Option<u64>,
    ) -> Result<(), StoreError> {
        let last = replies.len().saturating_sub(1);
        for (index, reply) in replies.into_iter().enumerate() {
            let following = follows.filter(|_| Following::takes(&reply.body));
            let mut outbound = Outbound {
                id: format!("{base}-{index}"),
                conversation: conversation.clone(),
                in_reply_to: reply.in_reply_to,
                body: reply.body,
                drafts: reply.drafts,
                turn_end: (index == last).then_some(tokens),
            };
            if let Some(following) = following.filter(|following| following.to != *conversation) {
                // What it answers and the drafts it would replace are where the turn ran.
                outbound.conversation = following.to.clone();
                outbound.in_reply_to = None;
                outbound.drafts = Vec::new();
            }
            let key = keys::sequenced(&outbound.conversation, &[base, index as u64]);
            let mut entry = OutboxEntry::new(key, outbound, journal_seq);
            entry.follows = following.map(|following| following.person);
            self.push(entry)?;
        }
        Ok(())
    }

    /// Adds the turn's messages `relayed` to the other chats of a bridge,
    /// after its replies, their ids counted from `base`.
    fn relayed(&mut self, base: u64, relayed: Vec<Relayed>) -> Result<(), StoreError> {
        for (index, relayed) in relayed.into_iter().enumerate() {
            let outbound = Outbound {
                id: format!("{base}-r{index}"),
                conversation: relayed.to.clone(),
                in_reply_to: None,
                body: relayed.body,
                drafts: Vec::new(),
                turn_end: None,
            };
            let key = keys::sequenced(&relayed.to, &[base, RELAYED_FROM + index as u64]);
            let mut entry = OutboxEntry::new(key, outbound, None);
            entry.relay = Some(relayed.relay);
            self.push(entry)?;
        }
        Ok(())
    }

    /// Adds `entry`, encoded as the outbox keeps it.
    fn push(&mut self, entry: OutboxEntry) -> Result<(), StoreError> {
        self.values.push(approvals::encode("outbox", &entry)?);
        self.entries.push(entry);
        Ok(())
    }
}

impl Store {
    /// Commits `turn` for `conversation` atomically and returns the outbox
    /// entries it created, in order. Reply ids derive from the journal
    /// sequence, so a turn redone after a crash produces the same ids.
    /// Not durable until [`Store::durable`]; see also
    /// [`Store::commit_turn_durably`].
    ///
    /// Fails with [`StoreError::AlreadyProcessed`] if the journal entry is no
    /// longer pending: a turn never commits twice.
    pub fn commit_turn(
        &self,
        conversation: &ConversationKey,
        turn: TurnCommit,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let prepared = self.wrote(self.prepare(conversation, turn))?;
        let applied = self.apply(std::slice::from_ref(&prepared))?;
        finish(prepared, applied[0])
    }

    /// `turn` for `conversation` as the keys and values its transaction
    /// writes: its outbox entries, then the rest of what it changes.
    pub(super) fn prepare(&self, conversation: &ConversationKey, turn: TurnCommit) -> Result<Prepared, StoreError> {
        let base = match turn.journal_seq {
            Some(seq) => seq,
            None => self.next_id()?,
        };
        let mut outgoing = Outgoing {
            entries: Vec::with_capacity(turn.replies.len()),
            values: Vec::with_capacity(turn.replies.len()),
        };
        outgoing.replies(
            conversation,
            base,
            turn.replies,
            turn.follows.as_ref(),
            turn.tokens,
            turn.journal_seq,
        )?;
        outgoing.relayed(base, turn.relayed)?;
        let Outgoing { entries, values } = outgoing;
        let forget = if turn.forget_history {
            self.history_keys(conversation)?
        } else {
            Vec::new()
        };
        let history = match turn.history_record {
            Some(record) => {
                let id = match turn.history_id {
                    Some(id) => id,
                    None => self.next_id()?,
                };
                Some((keys::sequenced(conversation, &[id]), record))
            }
            None => None,
        };
        let summary = match (&turn.summary, turn.forget_history) {
            (Some(write), _) => Some(write.encode(conversation)?),
            (None, true) => Some(SummaryWrite::Clear.encode(conversation)?),
            (None, false) => None,
        };
        let memory = turn
            .memory
            .iter()
            .map(MemoryWrite::encode)
            .collect::<Result<Vec<_>, _>>()?;
        let mut approvals = turn.approvals;
        for write in &mut approvals {
            if let ApprovalWrite::Create(approval) = write {
                approval.id = self.next_id()?;
            }
        }
        let pending_key = turn.journal_seq.map(|seq| keys::sequenced(conversation, &[seq]));
        let usage = turn
            .usage
            .filter(|add| !add.is_empty())
            .map(|add| (add.key(conversation), add));
        Ok(Prepared {
            journal_seq: turn.journal_seq,
            pending_key,
            entries,
            values,
            forget,
            history,
            memory,
            approvals,
            audit: turn.audit,
            loop_record: turn.loop_record,
            summary,
            handoff: turn.handoff,
            usage,
        })
    }

    /// Applies prepared commits in one transaction. A commit whose journal
    /// entry is no longer pending is skipped (`false`), the others applied.
    pub(super) fn apply(&self, prepared: &[Prepared]) -> Result<Vec<bool>, StoreError> {
        let _writing = self.writing();
        self.apply_ungated(prepared)
    }

    /// [`Store::apply`] without taking the write gate: the caller holds it.
    pub(super) fn apply_ungated(&self, prepared: &[Prepared]) -> Result<Vec<bool>, StoreError> {
        self.wrote(self.apply_in_transaction(prepared))
    }

    fn apply_in_transaction(&self, prepared: &[Prepared]) -> Result<Vec<bool>, StoreError> {
        let inner = &self.inner;
        let core = (
            &inner.pending,
            &inner.journal,
            &inner.outbox,
            &inner.history,
            &inner.memory,
            &inner.usage,
        );
        // Most turns ask for no approval, run no tool, are no loop's and
        // fold nothing into a summary: every tree in a sled transaction
        // costs, so those leave the approval, loop and summary trees out.
        let wide = prepared.iter().any(Prepared::is_wide);
        let applied = if wide {
            let (pending, journal, outbox, history, memory, usage) = core;
            (
                pending,
                journal,
                outbox,
                history,
                memory,
                usage,
                &inner.approvals,
                &inner.audit,
                &inner.loops,
                &inner.summaries,
                &inner.handoffs,
            )
                .transaction(
                    |(
                        pending,
                        journal,
                        outbox,
                        history,
                        memory,
                        usage,
                        approvals,
                        audit,
                        loops,
                        summaries,
                        handoffs,
                    )| {
                        let trees = Views {
                            pending,
                            journal,
                            outbox,
                            history,
                            memory,
                            usage,
                            wide: Some(Wide {
                                approvals,
                                audit,
                                loops,
                                summaries,
                                handoffs,
                            }),
                        };
                        apply_in(&trees, prepared)
                    },
                )?
        } else {
            core.transaction(|(pending, journal, outbox, history, memory, usage)| {
                let trees = Views {
                    pending,
                    journal,
                    outbox,
                    history,
                    memory,
                    usage,
                    wide: None,
                };
                apply_in(&trees, prepared)
            })?
        };
        Ok(applied)
    }
}

/// The trees a turn's transaction writes; the others only when needed.
struct Views<'a> {
    pending: &'a TransactionalTree,
    journal: &'a TransactionalTree,
    outbox: &'a TransactionalTree,
    history: &'a TransactionalTree,
    memory: &'a TransactionalTree,
    usage: &'a TransactionalTree,
    wide: Option<Wide<'a>>,
}

/// The trees only some turns write.
struct Wide<'a> {
    approvals: &'a TransactionalTree,
    audit: &'a TransactionalTree,
    loops: &'a TransactionalTree,
    summaries: &'a TransactionalTree,
    handoffs: &'a TransactionalTree,
}

/// Applies each commit inside one transaction; a commit whose journal entry
/// is no longer pending is skipped (`false`).
fn apply_in(trees: &Views<'_>, prepared: &[Prepared]) -> Result<Vec<bool>, ConflictableTransactionError<StoreError>> {
    let mut applied = Vec::with_capacity(prepared.len());
    for commit in prepared {
        if let (Some(seq), Some(pending_key)) = (commit.journal_seq, &commit.pending_key) {
            if trees.pending.remove(pending_key.as_slice())?.is_none() {
                applied.push(false);
                continue;
            }
            trees.journal.remove(&keys::seq(seq))?;
        }
        for (entry, value) in commit.entries.iter().zip(&commit.values) {
            trees.outbox.insert(entry.key(), value.as_slice())?;
        }
        for key in &commit.forget {
            trees.history.remove(key)?;
        }
        if let Some((key, record)) = &commit.history {
            trees.history.insert(key.as_slice(), record.as_slice())?;
        }
        for (key, value) in &commit.memory {
            match value {
                Some(value) => trees.memory.insert(key.as_slice(), value.as_slice())?,
                None => trees.memory.remove(key.as_slice())?,
            };
        }
        if let Some((key, add)) = &commit.usage {
            add.apply_in(trees.usage, key)?;
        }
        if let Some(wide) = &trees.wide {
            for write in &commit.approvals {
                approvals::apply_in(wide.approvals, wide.audit, write)?;
            }
            for event in &commit.audit {
                approvals::audit_in(wide.audit, event)?;
            }
            if let Some(write) = &commit.loop_record {
                write.apply_in(wide.loops)?;
            }
            match &commit.summary {
                Some((key, Some(value))) => {
                    wide.summaries.insert(key.as_slice(), value.as_slice())?;
                }
                Some((key, None)) => {
                    wide.summaries.remove(key.as_slice())?;
                }
                None => {}
            }
            if let Some(write) = &commit.handoff {
                write.apply_in(wide.handoffs)?;
            }
        }
        applied.push(true);
    }
    Ok(applied)
}

/// The outcome of one prepared commit after [`Store::apply`].
pub(super) fn finish(prepared: Prepared, applied: bool) -> Result<Vec<OutboxEntry>, StoreError> {
    match (applied, prepared.journal_seq) {
        (true, _) => Ok(prepared.entries),
        (false, Some(seq)) => Err(StoreError::AlreadyProcessed { seq }),
        (false, None) => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::ReplyKind;

    use super::*;
    use crate::store::Accepted;
    use crate::store::tests::{conversation, inbound, open_temp};

    fn reply(text: &str) -> PendingOutbound {
        PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::Text {
                text: text.into(),
                kind: ReplyKind::Answer,
            },
        }
    }

    #[test]
    fn a_turn_commits_replies_history_and_clears_pending_together() {
        let (_dir, store) = open_temp();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "hi"), 0).unwrap() else {
            panic!()
        };
        let turn = TurnCommit {
            journal_seq: Some(seq),
            history_record: Some(br#"["hi","hello"]"#.to_vec()),
            replies: vec![reply("hello")],
            ..TurnCommit::default()
        };
        let entries = store.commit_turn(&conversation("c"), turn).unwrap();
        assert_eq!(entries[0].outbound.id, format!("{seq}-0"));
        assert!(!store.is_pending(&conversation("c"), seq).unwrap());
        assert!(
            store.journal_entry(seq).unwrap().is_none(),
            "processed messages leave the journal"
        );
        assert_eq!(store.outbox_for(&conversation("c")).unwrap(), entries);
        assert_eq!(
            store.recent_turns::<Vec<String>>(&conversation("c"), 5).unwrap(),
            [vec!["hi", "hello"]]
        );
    }

    #[test]
    fn a_turn_never_commits_twice() {
        let (_dir, store) = open_temp();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "hi"), 0).unwrap() else {
            panic!()
        };
        let turn = TurnCommit {
            journal_seq: Some(seq),
            replies: vec![reply("a")],
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn.clone()).unwrap();
        assert!(store.commit_turn(&conversation("c"), turn).is_err());
        assert_eq!(store.outbox_len(), 1, "the failed second commit wrote nothing");
    }

    #[test]
    fn a_turns_tokens_are_added_with_its_commit_and_not_by_a_refused_one() {
        use crate::store::{ByProvider, Tokens, UsageAdd};
        let (_dir, store) = open_temp();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "hi"), 0).unwrap() else {
            panic!()
        };
        let used = ByProvider::from([(
            "p".to_owned(),
            Tokens {
                tokens_in: 7,
                tokens_out: 2,
            },
        )]);
        let turn = TurnCommit {
            journal_seq: Some(seq),
            replies: vec![reply("a")],
            usage: Some(UsageAdd {
                day: 3,
                used: used.clone(),
            }),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn.clone()).unwrap();
        assert_eq!(store.usage(Some(&conversation("c")), 3, 3).unwrap(), used);
        assert!(store.commit_turn(&conversation("c"), turn).is_err());
        assert_eq!(
            store.usage(None, 0, 9).unwrap(),
            used,
            "the refused commit added nothing"
        );
    }

    #[test]
    fn forget_clears_only_that_conversation() {
        let (_dir, store) = open_temp();
        for chat in ["a", "b"] {
            let turn = TurnCommit {
                history_record: Some(b"1".to_vec()),
                ..TurnCommit::default()
            };
            store.commit_turn(&conversation(chat), turn).unwrap();
        }
        let forget = TurnCommit {
            forget_history: true,
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("a"), forget).unwrap();
        assert_eq!(store.history_len(&conversation("a")), 0);
        assert_eq!(store.history_len(&conversation("b")), 1);
    }

    #[test]
    fn recent_turns_returns_the_last_n_oldest_first() {
        let (_dir, store) = open_temp();
        for n in 0..5u32 {
            let turn = TurnCommit {
                history_record: Some(n.to_string().into_bytes()),
                ..TurnCommit::default()
            };
            store.commit_turn(&conversation("c"), turn).unwrap();
        }
        assert_eq!(store.recent_turns::<u32>(&conversation("c"), 2).unwrap(), [3, 4]);
    }
}
