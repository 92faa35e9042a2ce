//! Human-in-the-loop approvals: an action the skills mark *require approval*
//! waits, as a record in the store, until a person with the right to decide
//! approves or denies it, the requester cancels it, or it times out.
//!
//! [`Approvals`] is the desk: it makes the records a turn commits
//! ([`Approvals::request`]), takes answers intercepted by perceive
//! ([`Approvals::answer`], in `desk.rs`), and keeps track of conversations
//! that are owed an outcome (settled by their worker through the pipeline).
//! Decisions are atomic in the store; the first one wins.

pub mod answer;
mod control;
mod desk;
pub mod expiry;
mod policy;
mod record;
mod token;
mod wrong_tokens;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use passepartout_gateway::{ApprovalToken, ConversationKey};
use tokio::sync::Notify;

pub use answer::{Choice, Parsed, Target};
pub use desk::Handled;
pub use policy::{Policy, Refused, may_decide};
pub use record::{Approval, Approver, Decision, How, Person, RunState, Status};

use crate::clock::Clock;
use crate::config::Config;
use crate::signal::Origin;
use crate::skills::ProposedCall;
use crate::store::{Store, StoreError};
use wrong_tokens::WrongTokens;

/// A call the skills held for approval, as act reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Requested {
    pub token: ApprovalToken,
    pub call: ProposedCall,
    pub skill: String,
    pub reason: String,
}

impl Requested {
    pub fn new(call: ProposedCall, skill: String, reason: String) -> Self {
        Self {
            token: token::generate(),
            call,
            skill,
            reason,
        }
    }
}

/// The approvals desk. One per daemon.
pub struct Approvals {
    store: Store,
    policy: Policy,
    clock: Clock,
    expire_after: Duration,
    wrong: WrongTokens,
    /// Conversations owed the outcome of a decided approval.
    unsettled: Mutex<BTreeSet<ConversationKey>>,
    /// Woken when an approval is created, so the expiry timer re-reads the earliest.
    created: Notify,
}

impl Approvals {
    pub fn new(store: Store, policy: Policy, clock: Clock, config: &Config) -> Self {
        Self {
            store,
            policy,
            clock,
            expire_after: Duration::from_secs(config.approvals.expire_after_s),
            wrong: WrongTokens::per_hour(config.approvals.wrong_tokens_per_hour),
            unsettled: Mutex::default(),
            created: Notify::new(),
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The record for `requested`, asked for by the turn that `origin` started.
    pub fn request(&self, origin: &Origin, requested: Requested) -> Approval {
        let now = self.clock.now_ms();
        Approval {
            id: 0, // the store numbers it when the turn commits
            token: requested.token,
            conversation: origin.conversation.clone(),
            requester: origin.sender.clone(),
            message_id: origin.message_id.clone(),
            call: requested.call,
            skill: requested.skill,
            reason: requested.reason,
            approvers: self.policy.approvers_for(&origin.conversation),
            created_ms: now,
            expires_ms: now + self.expire_after.as_millis() as u64,
            status: Status::Pending,
            decision: None,
            run: RunState::NotStarted,
            prompts: Vec::new(),
            output: None,
            settled: false,
        }
    }

    /// What the person is shown: the action, why, and how to answer.
    pub fn prompt_text(&self, approval: &Approval) -> String {
        let token = approval.token.as_str();
        format!(
            "Approval needed ({token}): {}\nWhy: {}.\nReply to this message with approve or deny, or send `approve {token}` or `deny {token}`. \
             After {} nobody can approve it, and it does not run.",
            approval.action(),
            approval.reason,
            minutes(self.expire_after)
        )
    }

    /// Tells the expiry timer that approvals were created.
    pub fn created(&self) {
        self.created.notify_one();
    }

    /// `conversation` is owed the outcome of a decided approval.
    pub fn mark_unsettled(&self, conversation: ConversationKey) {
        self.lock_unsettled().insert(conversation);
    }

    /// Whether `conversation` was owed an outcome (and now is in the caller's hands).
    pub fn take_unsettled(&self, conversation: &ConversationKey) -> bool {
        self.lock_unsettled().remove(conversation)
    }

    fn lock_unsettled(&self) -> std::sync::MutexGuard<'_, BTreeSet<ConversationKey>> {
        self.unsettled.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decided approvals of `conversation` whose outcome it has not been told, oldest first.
    pub fn unsettled_in(&self, conversation: &ConversationKey) -> Result<Vec<Approval>, StoreError> {
        Ok(self
            .store
            .approvals()?
            .into_iter()
            .filter(|a| !a.is_pending() && !a.settled && a.conversation == *conversation)
            .collect())
    }

    /// How many approvals wait for an answer.
    pub fn pending_count(&self) -> Result<usize, StoreError> {
        Ok(self.store.approvals()?.iter().filter(|a| a.is_pending()).count())
    }

    /// At start: every conversation owed an outcome (decided before the
    /// restart but not yet told) is marked, and returned to be nudged.
    pub fn recover(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let owed: BTreeSet<_> = self
            .store
            .approvals()?
            .into_iter()
            .filter(|a| !a.is_pending() && !a.settled)
            .map(|a| a.conversation)
            .collect();
        self.lock_unsettled().extend(owed.iter().cloned());
        Ok(owed.into_iter().collect())
    }
}

/// "15 minutes", "1 minute", "30 seconds".
pub fn minutes(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        s if s % 60 != 0 || s < 60 => format!("{s} second{}", if s == 1 { "" } else { "s" }),
        s => {
            let m = s / 60;
            format!("{m} minute{}", if m == 1 { "" } else { "s" })
        }
    }
}
