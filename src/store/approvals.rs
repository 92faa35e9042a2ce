//! The `approvals` tree (token → approval), the `prompts` tree (conversation
//! and platform message id of a delivered prompt → token, so a reply to the
//! prompt finds its approval) and the `audit` tree (id → event, in order).
//!
//! Approvals are created by a turn's commit, in the same transaction as the
//! turn (see [`super::turn`]). A decision is a transaction of its own that
//! changes a *pending* approval only, and audits itself: whoever commits
//! first wins, and every later answer sees the outcome.

use passepartout_gateway::{ApprovalToken, ConversationKey, MessageId};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use super::error::StoreError;
use super::records::{Approval, AuditEvent, Audited, Decision, RunState, Status};
use super::{Store, keys};

/// A change to an approval made by a turn's commit.
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalWrite {
    /// A new pending approval (audited as requested).
    Create(Box<Approval>),
    /// Its outcome entered the conversation; for an approved action, how the run ended.
    Settle {
        token: ApprovalToken,
        run: Option<RunState>,
    },
    /// The reminder before its timeout was sent.
    Reminded { token: ApprovalToken },
}

/// The result of [`Store::decide`].
#[derive(Clone, Debug, PartialEq)]
pub enum Decided {
    /// This decision was recorded (or had been, by this same message).
    Won(Approval),
    /// Someone decided first; this is what they decided.
    Already(Approval),
}

pub(super) fn encode<T: serde::Serialize>(tree: &'static str, value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError::Corrupt {
        tree,
        reason: e.to_string(),
    })
}

pub(super) fn decode<T: serde::de::DeserializeOwned>(tree: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        tree,
        reason: e.to_string(),
    })
}

fn prompt_key(conversation: &ConversationKey, message: &MessageId) -> Vec<u8> {
    keys::dedupe(conversation, message)
}

pub(super) type Abort = ConflictableTransactionError<StoreError>;

pub(super) fn abort(error: StoreError) -> Abort {
    ConflictableTransactionError::Abort(error)
}

/// Writes `event` into the audit tree inside a transaction, under a fresh id.
pub(super) fn audit_in(audit: &TransactionalTree, event: &AuditEvent) -> Result<(), Abort> {
    let id = audit.generate_id()?;
    let value = encode("audit", event).map_err(abort)?;
    audit.insert(&keys::seq(id), value)?;
    Ok(())
}

/// Applies `write` inside a turn's transaction.
pub(super) fn apply_in(
    approvals: &TransactionalTree,
    audit: &TransactionalTree,
    write: &ApprovalWrite,
) -> Result<(), Abort> {
    match write {
        ApprovalWrite::Create(approval) => {
            let key = approval.token.as_str().as_bytes();
            if approvals.get(key)?.is_some() {
                // Astronomically unlikely with random tokens; never overwrite.
                return Err(abort(StoreError::Corrupt {
                    tree: "approvals",
                    reason: format!("token {} exists already", approval.token.as_str()),
                }));
            }
            approvals.insert(key, encode("approvals", approval).map_err(abort)?)?;
            audit_in(
                audit,
                &AuditEvent {
                    at_ms: approval.created_ms,
                    conversation: approval.conversation.clone(),
                    what: Audited::Requested {
                        token: approval.token.clone(),
                        action: approval.action(),
                        requester: approval.requester.clone(),
                        requester_names: approval.requester_names.clone(),
                        reason: approval.reason.clone(),
                    },
                },
            )
        }
        ApprovalWrite::Settle { token, run } => {
            let key = token.as_str().as_bytes();
            let Some(bytes) = approvals.get(key)? else {
                return Err(abort(StoreError::Corrupt {
                    tree: "approvals",
                    reason: format!("settling unknown approval {}", token.as_str()),
                }));
            };
            let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
            approval.settled = true;
            if let Some(run) = run {
                approval.run = *run;
            }
            approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
            Ok(())
        }
        ApprovalWrite::Reminded { token } => {
            let key = token.as_str().as_bytes();
            // Gone (pruned after its decision) is nothing to mark.
            let Some(bytes) = approvals.get(key)? else {
                return Ok(());
            };
            let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
            approval.reminded = true;
            approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
            Ok(())
        }
    }
}

/// What deciding an approval found, inside a transaction.
pub(super) enum DecidedIn {
    /// This decision decided it, now.
    Now(Approval),
    /// This same message decided it before (its turn is being redone).
    Redone(Approval),
    /// Someone decided first; this is what they decided.
    Already(Approval),
}

impl From<DecidedIn> for Decided {
    fn from(decided: DecidedIn) -> Self {
        match decided {
            DecidedIn::Now(approval) | DecidedIn::Redone(approval) => Decided::Won(approval),
            DecidedIn::Already(approval) => Decided::Already(approval),
        }
    }
}

/// Records `decision` on the pending approval `token` inside a transaction,
/// with its audit event, unless someone decided first.
pub(super) fn decide_in(
    approvals: &TransactionalTree,
    audit: &TransactionalTree,
    token: &ApprovalToken,
    decision: &Decision,
) -> Result<DecidedIn, Abort> {
    let key = token.as_str().as_bytes();
    let Some(bytes) = approvals.get(key)? else {
        return Err(abort(StoreError::Corrupt {
            tree: "approvals",
            reason: format!("deciding unknown approval {}", token.as_str()),
        }));
    };
    let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
    if approval.status != Status::Pending {
        let same_message =
            decision.message.is_some() && approval.decision.as_ref().map(|d| &d.message) == Some(&decision.message);
        return Ok(if same_message {
            DecidedIn::Redone(approval)
        } else {
            DecidedIn::Already(approval)
        });
    }
    approval.status = decision.outcome;
    approval.decision = Some(decision.clone());
    approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
    audit_in(
        audit,
        &AuditEvent {
            at_ms: decision.at_ms,
            conversation: approval.conversation.clone(),
            what: Audited::Decided {
                token: approval.token.clone(),
                action: approval.action(),
                outcome: decision.outcome,
                by: decision.by.clone(),
                how: decision.how,
            },
        },
    )?;
    Ok(DecidedIn::Now(approval))
}

impl Store {
    /// The approval with this token.
    pub fn approval(&self, token: &ApprovalToken) -> Result<Option<Approval>, StoreError> {
        match self.inner.approvals.get(token.as_str().as_bytes())? {
            Some(bytes) => Ok(Some(decode("approvals", &bytes)?)),
            None => Ok(None),
        }
    }

    /// The approval whose prompt is `message` in `conversation`.
    pub fn approval_by_prompt(
        &self,
        conversation: &ConversationKey,
        message: &MessageId,
    ) -> Result<Option<Approval>, StoreError> {
        let Some(token) = self.inner.prompts.get(prompt_key(conversation, message))? else {
            return Ok(None);
        };
        let token = std::str::from_utf8(&token)
            .ok()
            .and_then(|t| ApprovalToken::new(t).ok())
            .ok_or_else(|| StoreError::Corrupt {
                tree: "prompts",
                reason: "unreadable token".into(),
            })?;
        self.approval(&token)
    }

    /// Remembers that `token`'s prompt was delivered as `messages`, both
    /// ways: a reply to one finds the approval, the approval finds them.
    pub fn index_prompt(
        &self,
        conversation: &ConversationKey,
        token: &ApprovalToken,
        messages: &[MessageId],
    ) -> Result<(), StoreError> {
        let _writing = self.writing();
        let key = token.as_str().as_bytes();
        let written = (&self.inner.prompts, &self.inner.approvals).transaction(|(prompts, approvals)| {
            for message in messages {
                prompts.insert(prompt_key(conversation, message), key)?;
            }
            // The approval knows its prompt too, to have it edited once decided.
            if let Some(bytes) = approvals.get(key)? {
                let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
                approval.prompts.extend(messages.iter().cloned());
                approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
            }
            Ok(())
        });
        self.wrote(written.map_err(StoreError::from))?;
        Ok(())
    }

    /// Every approval, oldest first.
    pub fn approvals(&self) -> Result<Vec<Approval>, StoreError> {
        let mut all = self
            .inner
            .approvals
            .iter()
            .values()
            .map(|value| decode::<Approval>("approvals", &value?))
            .collect::<Result<Vec<_>, _>>()?;
        all.sort_by_key(|approval| approval.id);
        Ok(all)
    }

    /// Records `decision` on a pending approval — atomically, with its audit
    /// event — unless someone decided first.
    pub fn decide(&self, token: &ApprovalToken, decision: Decision) -> Result<Decided, StoreError> {
        let _writing = self.writing();
        let inner = &self.inner;
        let decided = (&inner.approvals, &inner.audit)
            .transaction(|(approvals, audit)| decide_in(approvals, audit, token, &decision));
        let decided = self.wrote(decided.map_err(StoreError::from))?;
        Ok(decided.into())
    }

    /// Marks an approved action as started, unless it was started before.
    /// Returns whether this call started it; make it durable before running.
    pub fn start_run(&self, token: &ApprovalToken, at_ms: u64) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let key = token.as_str().as_bytes();
        let started = self.inner.approvals.transaction(|approvals| {
            let Some(bytes) = approvals.get(key)? else {
                return Ok(false);
            };
            let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
            if approval.status != Status::Approved || approval.run != RunState::NotStarted {
                return Ok(false);
            }
            approval.run = RunState::Started { at_ms };
            approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
            Ok(true)
        });
        let started = self.wrote(started.map_err(StoreError::from))?;
        Ok(started)
    }

    /// Records how an approved run ended, its output, and its audit event,
    /// in one transaction, so the outcome survives whatever happens next.
    /// Make it durable before going on.
    pub fn finish_run(
        &self,
        token: &ApprovalToken,
        run: RunState,
        output: &str,
        event: &AuditEvent,
    ) -> Result<(), StoreError> {
        let _writing = self.writing();
        let key = token.as_str().as_bytes();
        let written = (&self.inner.approvals, &self.inner.audit).transaction(|(approvals, audit)| {
            let Some(bytes) = approvals.get(key)? else {
                return Err(abort(StoreError::Corrupt {
                    tree: "approvals",
                    reason: format!("finishing unknown approval {}", token.as_str()),
                }));
            };
            let mut approval: Approval = decode("approvals", &bytes).map_err(abort)?;
            approval.run = run;
            approval.output = Some(output.to_owned());
            approvals.insert(key, encode("approvals", &approval).map_err(abort)?)?;
            audit_in(audit, event)
        });
        self.wrote(written.map_err(StoreError::from))?;
        Ok(())
    }

    /// Forgets approvals decided before `cutoff_ms` whose outcome was told,
    /// and the prompts that pointed at them. Returns how many went.
    pub fn prune_approvals(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let _writing = self.writing();
        let mut gone = std::collections::HashSet::new();
        for item in self.inner.approvals.iter() {
            let (key, value) = item?;
            let approval: Approval = decode("approvals", &value)?;
            let old = approval.decision.as_ref().is_some_and(|d| d.at_ms < cutoff_ms);
            if approval.settled && old {
                self.wrote(self.inner.approvals.remove(&key).map_err(StoreError::from))?;
                gone.insert(key.to_vec());
            }
        }
        if !gone.is_empty() {
            for item in self.inner.prompts.iter() {
                let (key, token) = item?;
                if gone.contains(token.as_ref()) {
                    self.wrote(self.inner.prompts.remove(key).map_err(StoreError::from))?;
                }
            }
        }
        Ok(gone.len())
    }

    /// Audit events, oldest first; the newest `limit` of them.
    pub fn audit_events(&self, limit: usize) -> Result<Vec<AuditEvent>, StoreError> {
        let mut events = self
            .inner
            .audit
            .iter()
            .values()
            .rev()
            .take(limit)
            .map(|value| decode::<AuditEvent>("audit", &value?))
            .collect::<Result<Vec<_>, _>>()?;
        events.reverse();
        Ok(events)
    }

    /// Deletes audit events older than `cutoff_ms`; returns how many went.
    /// An event that does not read is kept, to be looked at rather than lost.
    pub fn prune_audit(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        /// An event's time: all the sweep reads of it.
        #[derive(serde::Deserialize)]
        struct Dated {
            at_ms: u64,
        }
        let _writing = self.writing();
        let mut pruned = 0;
        for item in self.inner.audit.iter() {
            let (key, value) = item?;
            let old = serde_json::from_slice::<Dated>(&value).is_ok_and(|event| event.at_ms < cutoff_ms);
            if old {
                self.wrote(self.inner.audit.remove(key).map_err(StoreError::from))?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }
}

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
