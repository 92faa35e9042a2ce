//! Human-in-the-loop approvals: an action the skills mark *require approval*
//! waits, as a record in the store, until a person with the right to decide
//! approves or denies it, the requester cancels it, or it times out.
//!
//! [`Approvals`] is the desk: it makes the records a turn commits
//! ([`Approvals::request`]), takes answers intercepted by perceive
//! ([`Approvals::answer`], in `desk.rs`), and keeps track of conversations
//! that are owed an outcome (settled by their worker through the pipeline).
//! Decisions are atomic in the store; the first one wins. An "always"
//! answer also makes a standing rule (`standing/`), which lets calls like
//! the approved one run in its conversation without asking.

pub mod answer;
mod batch;
mod control;
mod desk;
pub mod expiry;
mod ledger;
mod policy;
mod prompt;
mod record;
pub mod standing;
mod tally;
mod token;
mod unconfined;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use passepartout_gateway::{ApprovalToken, ConversationKey};
use tokio::sync::Notify;

pub use answer::{Choice, Parsed, RulesAsk, Target};
pub use desk::Handled;
pub use ledger::Owed;
pub use policy::{Policy, Refused, may_decide};
pub use record::{Approval, Approver, Decision, How, Person, RunState, Status};
pub use standing::StandingRules;
pub use tally::Decisions;
pub use unconfined::Unconfined;

use crate::config::ApprovalsConfig;
use crate::foundation::clock::Clock;
use crate::foundation::notices::Surfaces;
use crate::model::signal::Origin;
use crate::people::guesses::{Guesses, Secret};
use crate::safety::skills::ProposedCall;
use crate::store::{Decided, StandingRule, Store, StoreError};
use ledger::{Due, Ledger};
use policy::may_act;
use tally::Tally;

/// A call the skills held for approval, as act reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Requested {
    pub token: ApprovalToken,
    pub call: ProposedCall,
    pub skill: String,
    pub reason: String,
    /// How the models voted on it, when they did.
    pub votes: Option<String>,
}

impl Requested {
    pub fn new(call: ProposedCall, skill: String, reason: String) -> Self {
        Self {
            token: token::generate(),
            call,
            skill,
            reason,
            votes: None,
        }
    }

    /// The request with how the models voted on it, shown in its prompt.
    pub fn with_votes(self, votes: Option<String>) -> Self {
        Self { votes, ..self }
    }
}

/// The approvals desk. One per daemon.
pub struct Approvals {
    store: Store,
    /// Replaced whole when the configuration is reloaded.
    policy: ArcSwap<Policy>,
    clock: Clock,
    expire_after: Duration,
    /// How long before its timeout a pending approval is reminded of; zero for never.
    remind_before: Duration,
    wrong: Guesses,
    /// Outcomes owed, and deadlines of pending approvals.
    ledger: Ledger,
    /// Woken when an approval is created, so the expiry timer re-reads the earliest.
    created: Notify,
    /// The calls people let run without asking.
    standing: StandingRules,
    /// How each gateway's people answer, for the prompts' wording.
    surfaces: Surfaces,
    /// The decisions recorded since the start, by outcome.
    tally: Tally,
    /// The tools whose processes run unconfined (no Landlock): each of their
    /// prompts says so.
    unconfined: Unconfined,
}

impl Approvals {
    /// A desk keeping its records in `store`, deciding who may answer by
    /// `policy`, on `clock`, with the `[approvals]` settings.
    pub fn new(store: Store, policy: Policy, clock: Clock, settings: &ApprovalsConfig) -> Self {
        Self {
            wrong: Guesses::new(store.clone(), Secret::Token, settings.wrong_tokens_per_hour),
            standing: StandingRules::new(store.clone(), clock, settings.rule_days),
            store,
            policy: ArcSwap::from_pointee(policy),
            clock,
            expire_after: Duration::from_secs(settings.expire_after_s),
            remind_before: Duration::from_secs(settings.remind_before_s),
            ledger: Ledger::default(),
            created: Notify::new(),
            surfaces: Surfaces::default(),
            tally: Tally::default(),
            unconfined: Unconfined::default(),
        }
    }

    /// The desk, the prompts of the tools `unconfined` names saying that
    /// the call runs unconfined (the kernel offers no Landlock).
    pub fn with_unconfined(self, unconfined: Unconfined) -> Self {
        Self { unconfined, ..self }
    }

    /// The desk, wording its prompts for the gateways' `surfaces` (without
    /// them, every conversation is told to send the answer as text).
    pub fn with_surfaces(self, surfaces: Surfaces) -> Self {
        Self { surfaces, ..self }
    }

    /// The surface `conversation` is shown on, to word messages for it.
    pub fn surface_of(&self, conversation: &ConversationKey) -> passepartout_gateway::Surface {
        self.surfaces.of(conversation)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether `gateway` vouches for its peers (see [`Policy::vouches`]).
    pub fn vouches(&self, gateway: &passepartout_gateway::GatewayId) -> bool {
        self.policy.load().vouches(gateway)
    }

    /// Who decides from now on: approvals asked for later list these
    /// approvers, and a pending one is decided only by someone both lists.
    pub fn set_policy(&self, policy: Policy) {
        self.policy.store(Arc::new(policy));
    }

    /// The live standing rule that lets `call` run in `conversation`
    /// without asking, made by someone who may still approve there: a rule
    /// of an approver taken off the lists lets nothing run.
    pub fn rule_covering(
        &self,
        conversation: &ConversationKey,
        call: &ProposedCall,
    ) -> Option<crate::store::StandingRule> {
        self.standing
            .covering_where(conversation, call, |rule| self.may_approve_in(&rule.by, conversation))
    }

    /// Whether `person` may still approve what is asked in `conversation`,
    /// from wherever they answered: one of its approvers (its chat's, a
    /// paired one, a global one), the local user (in the terminal or signed
    /// in on the dashboard, who decides everything), or someone linked with
    /// one of its approvers (who decided as them, from their own chat).
    fn may_approve_in(&self, person: &Person, conversation: &ConversationKey) -> bool {
        let policy = self.policy.load();
        if policy.local_gateway() == Some(&person.gateway) {
            return true;
        }
        let approvers = policy.approvers_for(conversation);
        if may_act(&approvers, conversation, person, conversation).is_ok() {
            return true;
        }
        let linked = match self.store.person_of(&person.gateway, &person.user) {
            Ok(linked) => linked,
            Err(error) => {
                tracing::warn!(%error, "cannot read whom a person is linked with; only the approver lists decide");
                None
            }
        };
        linked.into_iter().flat_map(|linked| linked.identities).any(|identity| {
            let as_them = Person {
                gateway: identity.gateway,
                user: identity.user,
                aliases: identity.aliases,
                names: identity.names,
            };
            may_act(&approvers, conversation, &as_them, conversation).is_ok()
        })
    }

    /// Whether `person` may approve what is asked for in `conversation`
    /// now: who may see the daemon-wide views (`/status`, `/loops`, the
    /// totals of `/usage`) from there.
    pub fn approves_in(&self, person: &Person, conversation: &ConversationKey) -> bool {
        let approvers = self.policy.load().approvers_for(conversation);
        may_act(&approvers, conversation, person, conversation).is_ok()
    }

    /// Whether `person`, answering in `conversation`, may decide `approval`:
    /// one of the approvers it was asked of, who still is one now (an
    /// approver taken off the lists, or a paired one revoked, no longer
    /// decides what waits); or the person who asked for it, answering from
    /// a private conversation on another channel they linked where they
    /// approve too, when they may decide it where it was asked.
    pub fn may_decide(
        &self,
        approval: &Approval,
        person: &Person,
        conversation: &ConversationKey,
    ) -> Result<(), Refused> {
        let listed = self.listed_may_decide(approval, person, conversation);
        match listed {
            Err(_) if self.asked_it_elsewhere(approval, person, conversation) => Ok(()),
            listed => listed,
        }
    }

    fn listed_may_decide(
        &self,
        approval: &Approval,
        person: &Person,
        conversation: &ConversationKey,
    ) -> Result<(), Refused> {
        may_decide(approval, person, conversation)?;
        let now = self.policy.load().approvers_for(&approval.conversation);
        may_act(&now, &approval.conversation, person, conversation)
    }

    /// Whether `person` is who asked for `approval` under another account
    /// linked with theirs, answering in the private conversation they linked
    /// from, where they may approve on their own, and that account may
    /// decide it where it was asked.
    fn asked_it_elsewhere(&self, approval: &Approval, person: &Person, conversation: &ConversationKey) -> bool {
        let here = self.policy.load().approvers_for(conversation);
        if may_act(&here, conversation, person, conversation).is_err() {
            return false;
        }
        let linked = match self.store.person_of(&person.gateway, &person.user) {
            Ok(Some(linked)) => linked,
            Ok(None) => return false,
            Err(error) => {
                tracing::warn!(%error, "cannot read whom a person is linked with; only the approver lists decide");
                return false;
            }
        };
        let answering_from_their_own = linked
            .identity(&person.gateway, &person.user)
            .is_some_and(|identity| identity.conversation == *conversation);
        let Some(asker) = linked
            .identity(&approval.conversation.gateway, &approval.requester)
            .filter(|_| answering_from_their_own)
        else {
            return false;
        };
        let as_asker = Person {
            gateway: asker.gateway.clone(),
            user: asker.user.clone(),
            aliases: asker.aliases.clone(),
            names: asker.names.clone(),
        };
        self.listed_may_decide(approval, &as_asker, &approval.conversation)
            .is_ok()
    }

    /// The standing rules, as act asks about a call held for approval.
    pub fn standing(&self) -> &StandingRules {
        &self.standing
    }

    /// The record for `requested`, asked for by the turn that `origin` started.
    pub fn request(&self, origin: &Origin, requested: Requested) -> Approval {
        let now = self.clock.now_ms();
        Approval {
            id: 0, // the store numbers it when the turn commits
            token: requested.token,
            conversation: origin.conversation.clone(),
            requester: origin.sender.clone(),
            requester_names: origin.sender_names.clone(),
            message_id: origin.message_id.clone(),
            call: requested.call,
            skill: requested.skill,
            reason: requested.reason,
            votes: requested.votes,
            approvers: self.policy.load().approvers_for(&origin.conversation),
            created_ms: now,
            expires_ms: now + self.expire_after.as_millis() as u64,
            status: Status::Pending,
            decision: None,
            run: RunState::NotStarted,
            prompts: Vec::new(),
            reminded: false,
            output: None,
            settled: false,
        }
    }

    /// The reminders `conversation` is owed (now in the caller's hands):
    /// its approvals that still wait and were not reminded of, oldest first.
    pub fn take_reminders(&self, conversation: &ConversationKey) -> Result<Vec<Approval>, StoreError> {
        let mut due = Vec::new();
        for token in self.ledger.take_reminders(conversation) {
            if let Some(approval) = self.store.approval(&token)?
                && approval.is_pending()
                && !approval.reminded
                && approval.conversation == *conversation
            {
                due.push(approval);
            }
        }
        due.sort_by_key(|a| a.id);
        Ok(due)
    }

    /// Approvals were committed: their deadlines are armed.
    pub fn created<'a>(&self, approvals: impl IntoIterator<Item = &'a Approval>) {
        for approval in approvals {
            self.arm(approval);
        }
        self.created.notify_one();
    }

    /// Arms the deadlines of a pending approval: its timeout, and its
    /// reminder unless it was sent or would come no later than the request.
    fn arm(&self, approval: &Approval) {
        let token = &approval.token;
        self.ledger
            .add_deadline(approval.expires_ms, Due::Expiry, token.clone());
        let before = self.remind_before.as_millis() as u64;
        let remind_at = approval.expires_ms.saturating_sub(before);
        if before > 0 && !approval.reminded && remind_at > approval.created_ms {
            self.ledger.add_deadline(remind_at, Due::Reminder, token.clone());
        }
    }

    /// A conversation is owed the outcome of a decided approval.
    pub fn mark_unsettled(&self, owed: Owed) {
        self.ledger.owe(owed);
    }

    /// The approvals `conversation` is owed the outcome of (now in the
    /// caller's hands), decided and not yet told, oldest first.
    pub fn take_unsettled(&self, conversation: &ConversationKey) -> Result<Vec<Approval>, StoreError> {
        let mut owed = Vec::new();
        for token in self.ledger.take(conversation) {
            if let Some(approval) = self.store.approval(&token)?
                && !approval.is_pending()
                && !approval.settled
                && approval.conversation == *conversation
            {
                owed.push(approval);
            }
        }
        owed.sort_by_key(|a| a.id);
        Ok(owed)
    }

    /// How many approvals were decided since the start, by outcome.
    pub fn decisions(&self) -> Decisions {
        self.tally.read()
    }

    /// [`Approvals::decide_choosing`], counted: a decision that made a
    /// standing rule was recorded with the rule, not by
    /// [`Approvals::record`], so it is counted here ("always" is an
    /// approval like any other).
    fn decide_counted(
        &self,
        approval: &Approval,
        decision: Decision,
        always: bool,
    ) -> Result<(Decided, Option<StandingRule>), StoreError> {
        let chosen = self.decide_choosing(approval, decision, always)?;
        if let (Decided::Won(decided), Some(_)) = &chosen {
            self.tally.count(decided.status);
        }
        Ok(chosen)
    }

    /// Records `decision` on the approval `token` names, counting it when
    /// it is the one that stands.
    fn record(&self, token: &ApprovalToken, decision: Decision) -> Result<Decided, StoreError> {
        let decided = self.store.decide(token, decision)?;
        if let Decided::Won(approval) = &decided {
            self.tally.count(approval.status);
        }
        Ok(decided)
    }

    /// How many approvals wait for an answer.
    pub fn pending_count(&self) -> Result<usize, StoreError> {
        Ok(self.store.approvals()?.iter().filter(|a| a.is_pending()).count())
    }

    /// At start: every outcome owed (decided before the restart but not
    /// yet told) is marked, its conversation returned to be woken; every
    /// pending approval's deadline is armed.
    pub fn recover(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let mut conversations = std::collections::BTreeSet::new();
        for approval in self.store.approvals()? {
            if approval.is_pending() {
                self.arm(&approval);
            } else if !approval.settled {
                conversations.insert(approval.conversation.clone());
                self.ledger.owe(Owed {
                    conversation: approval.conversation,
                    token: approval.token,
                });
            }
        }
        self.created.notify_one();
        Ok(conversations.into_iter().collect())
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
