//! Pairing: letting a new person in without editing the configuration.
//!
//! Someone a gateway's lists do not name who writes is sent a one-time code
//! ([`Pairing::offer`], from the intake; nothing they write is journaled),
//! and every owner of that gateway is told who asks, by name ([`notices`]).
//! An owner — someone who may approve actions on their gateway, or the local
//! socket's user — names the code (`passepartout pair approve CODE`, or
//! `/pair approve CODE` in their chat, [`command`]) and the person is let
//! in, as an approver too if asked (only by someone who may approve on the
//! person's own gateway, or the owner at the terminal or the dashboard),
//! and told so. The people paired are kept in the store and
//! handed to the access lists and the approvals' policy as one live
//! [`Paired`] set, beside the configuration's lists, which stay as they
//! are: what the configuration names cannot be revoked here. The codes
//! waiting are kept in the store too, so a restart voids none already sent;
//! at most `pairing.max_waiting` wait at once, and the owner clears them
//! with `passepartout pair clear` ([`clearing`]). The owners hear of a few
//! strangers a minute per gateway one by one, of the rest folded
//! ([`announced`]). Every step is
//! audited; codes are never logged, and an owner who names too many wrong
//! codes in an hour has further codes refused unread.

mod announced;
mod clearing;
mod code;
pub(crate) mod codes;
pub mod command;
mod listing;
mod notices;

use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;

use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Inbound, MessageId, Outbound, UserId};
use thiserror::Error;

use announced::{Announce, Announced};
pub use code::Code;
use codes::{Codes, Issued, Pending};
use command::PairCommand;
pub use listing::Waiting;

use crate::config::{ApprovalsConfig, PairingConfig};
use crate::foundation::clock::Clock;
use crate::people::access::{Paired, Roster};
use crate::people::guesses::{Guesses, Secret};
use crate::store::{AuditEvent, Audited, Names, PairedPerson, Person, Store, StoreError};

/// Why a code was not approved, or a person not revoked. The messages are
/// for the owner; a wrong code and an expired one read the same.
#[derive(Debug, Error)]
pub enum PairError {
    #[error("only an approver may let someone in")]
    NotOwner,
    #[error(
        "only someone who may approve on {0} may make an approver there; let them in to talk only, without \"approver\""
    )]
    ApproverElsewhere(GatewayId),
    #[error("no such pairing code (or it expired)")]
    Unknown,
    #[error("{0:?} is neither a gateway, a person waiting (gateway:user) nor a pairing code")]
    NotWaiting(String),
    #[error("too many wrong pairing codes in the last hour; try again later")]
    Limited,
    #[error("{0:?} is not gateway:user (e.g. \"telegram:123456789\")")]
    NotAPerson(String),
    #[error("{0} is not paired")]
    NotPaired(String),
    #[error("{0} is listed in the configuration; remove them there")]
    Configured(String),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

/// One gateway's lists from the configuration.
#[derive(Clone, Debug)]
pub struct Lists {
    pub gateway: GatewayId,
    pub talkers: Roster,
    pub deciders: Roster,
}

/// What the intake does with someone not allowed.
#[derive(Debug)]
pub enum Offer {
    /// Send them this (their new code) at once; the owners' conversations
    /// in `told` have been told who asks, in their outboxes.
    Send {
        code: Box<Outbound>,
        told: Vec<ConversationKey>,
    },
    /// They were sent a code that is still live: say nothing.
    Sent,
    /// As many codes wait as may: refuse them, as with pairing off.
    Full,
}

/// A person let in, and the conversation where they were told so (its
/// outbox holds the notice).
#[derive(Debug)]
pub struct LetIn {
    pub person: PairedPerson,
    pub told: ConversationKey,
}

/// The pairing desk: codes waiting, people paired, who may pair.
pub struct Pairing {
    settings: PairingConfig,
    codes: Mutex<Codes>,
    /// Owners' wrong codes (`pairing.wrong_codes_per_hour`).
    guesses: Guesses,
    paired: Arc<Paired>,
    /// The configuration's lists, and its global approvers: replaced when
    /// it is reloaded.
    lists: ArcSwap<Vec<Lists>>,
    global: ArcSwap<Vec<(String, String)>>,
    /// How many requests each gateway's owners were told of this minute.
    announced: Announced,
    store: Store,
    clock: Clock,
}

impl Pairing {
    /// With the configuration's `lists`, loading the people paired before.
    pub fn new(
        settings: &PairingConfig,
        approvals: &ApprovalsConfig,
        lists: Vec<Lists>,
        store: Store,
        clock: Clock,
    ) -> Result<Self, StoreError> {
        let paired = Arc::new(Paired::default());
        for person in store.paired()? {
            paired.insert(person.gateway, person.user, person.approver);
        }
        // The codes sent before a restart, unless pairing is off now (which
        // voids them); one that cannot be read is forgotten (never logged).
        let (kept, forgotten) = codes::restore(store.pairing_codes()?, settings.enabled);
        if !forgotten.is_empty() {
            store.forget_pairing_codes(&forgotten)?;
        }
        let max = usize::try_from(settings.max_waiting).unwrap_or(usize::MAX);
        let mut codes = Codes::new(settings.expire_s.saturating_mul(1000), max, kept);
        forget_expired(&store, &mut codes, clock.now_ms());
        Ok(Self {
            settings: settings.clone(),
            codes: Mutex::new(codes),
            guesses: Guesses::new(store.clone(), Secret::PairingCode, settings.wrong_codes_per_hour),
            paired,
            lists: ArcSwap::from_pointee(lists),
            global: ArcSwap::from_pointee(approvals.global().unwrap_or_default()),
            announced: Announced::default(),
            store,
            clock,
        })
    }

    /// Who the configuration lets in and who approves, from now on (a
    /// reloaded configuration's `lists` and `[approvals]`).
    pub fn set_lists(&self, lists: Vec<Lists>, approvals: &ApprovalsConfig) {
        self.lists.store(Arc::new(lists));
        self.global.store(Arc::new(approvals.global().unwrap_or_default()));
    }

    /// The live set of people paired, for the access lists and the policy.
    pub fn paired(&self) -> Arc<Paired> {
        self.paired.clone()
    }

    /// What to do with `inbound`, whose sender is not allowed: none when
    /// pairing is off (they are refused, as before).
    pub fn offer(&self, inbound: &Inbound) -> Option<Offer> {
        if !self.settings.enabled {
            return None;
        }
        let now_ms = self.clock.now_ms();
        let pending = Pending {
            conversation: inbound.conversation.clone(),
            user: inbound.sender.id.clone(),
            issued_ms: now_ms,
            names: Names::of(&inbound.sender),
        };
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        forget_expired(&self.store, &mut codes, now_ms);
        let code = match codes.issue(pending.clone()) {
            Issued::New(code) => code,
            Issued::Live => return Some(Offer::Sent),
            Issued::Full => {
                tracing::warn!(
                    max_waiting = self.settings.max_waiting,
                    conversation = %inbound.conversation,
                    "as many pairing codes wait as may (pairing.max_waiting); a stranger is refused"
                );
                return Some(Offer::Full);
            }
        };
        let event = AuditEvent {
            at_ms: now_ms,
            conversation: inbound.conversation.clone(),
            what: Audited::PairingOffered {
                person: inbound.sender.id.clone(),
                names: pending.names.clone(),
            },
        };
        let minutes = self.settings.expire_s.div_ceil(60);
        let gateway = &inbound.conversation.gateway;
        let owners = self.owners_of(gateway);
        let requests = match self.announced.next(gateway, now_ms) {
            Announce::Tell { unannounced } => notices::request(&owners, &pending, code.as_str(), minutes, unannounced),
            Announce::Fold => notices::folded(&owners, &pending),
            Announce::Hold => Vec::new(),
        };
        let told = match self.store.keep_pairing_code(code.as_str(), &pending, &event, &requests) {
            Ok(()) => requests.into_iter().map(|(conversation, _)| conversation).collect(),
            Err(error) => {
                // The code still works until a restart; the owners were not told.
                tracing::error!(%error, "cannot keep a pairing code in the store");
                Vec::new()
            }
        };
        drop(codes);
        tracing::info!(conversation = %inbound.conversation, user = %inbound.sender.id, owners_told = told.len(), "sent a pairing code");
        let told_them = if told.is_empty() {
            ""
        } else {
            " Its owner has been told you ask; you will get a message here when you are let in."
        };
        let text = format!(
            "This assistant is private. To be let in, ask its owner to approve your pairing code `{code}`. \
             It is valid for {minutes} minutes.{told_them}",
            code = code.as_str()
        );
        Some(Offer::Send {
            code: Box::new(notice(inbound, None, text)),
            told,
        })
    }

    /// The answer to an owner's `/pair` in `inbound`, and the conversation
    /// of the person let in, whose outbox tells them so.
    pub fn answer_command(&self, inbound: &Inbound, command: &PairCommand) -> (Outbound, Option<ConversationKey>) {
        let by = Person::of(inbound);
        let (text, told) = match self.approve(&command.code, command.approver, &by, &inbound.conversation) {
            Ok(let_in) => (paired_message(&let_in.person), Some(let_in.told)),
            Err(error) => (format!("Not paired: {error}."), None),
        };
        (notice(inbound, Some(inbound.message_id.clone()), text), told)
    }

    /// Whether `person` may let people in: someone who may approve on their
    /// gateway (everyone on a gateway that vouches for its peers, as the
    /// local socket does), a global approver, or someone paired as one.
    pub fn is_owner(&self, person: &Person) -> bool {
        let is = |user: &String| UserId::new(user.clone()).is_ok_and(|user| person.is(&user));
        let listed = self
            .lists
            .load()
            .iter()
            .filter(|l| l.gateway == person.gateway)
            .any(|l| match &l.deciders {
                Roster::Everyone => true,
                Roster::Listed { users, .. } => users.iter().any(is),
            });
        let mut sender = passepartout_gateway::Sender::new(person.user.clone());
        sender.aliases = person.aliases.clone();
        listed || self.is_global(person) || self.paired.approves(&person.gateway, &sender)
    }

    /// Whether `person`, an owner, may make an approver on `gateway`: one
    /// who approves there, the owner at the terminal or the dashboard (a
    /// gateway that vouches for its peers), or a global approver. An
    /// approver on one messenger makes none on another.
    pub fn makes_approvers_on(&self, person: &Person, gateway: &GatewayId) -> bool {
        let vouched = (self.lists.load().iter()).any(|l| l.gateway == person.gateway && l.deciders == Roster::Everyone);
        self.is_owner(person) && (person.gateway == *gateway || vouched || self.is_global(person))
    }

    /// Whether `person` is among `approvals.global_approvers`.
    fn is_global(&self, person: &Person) -> bool {
        let is = |user: &String| UserId::new(user.clone()).is_ok_and(|user| person.is(&user));
        (self.global.load().iter()).any(|(gateway, user)| gateway == person.gateway.as_str() && is(user))
    }

    /// Lets in whoever `typed` is the code of, as an approver too if
    /// `approver`, on the word of `by`, answering in `conversation`.
    pub fn approve(
        &self,
        typed: &str,
        approver: bool,
        by: &Person,
        conversation: &ConversationKey,
    ) -> Result<LetIn, PairError> {
        if !self.is_owner(by) {
            return Err(PairError::NotOwner);
        }
        let now_ms = self.clock.now_ms();
        if self.guesses.is_limited(by, now_ms) {
            return Err(PairError::Limited);
        }
        let taken = Code::parse(typed).and_then(|code| {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            forget_expired(&self.store, &mut codes, now_ms);
            Some((codes.take(&code, now_ms)?, code))
        });
        let Some((pending, code)) = taken else {
            self.guesses.record(by, now_ms);
            tracing::info!(by = %by, "refused an unknown pairing code");
            crate::people::audit::alone(
                &self.store,
                now_ms,
                conversation.clone(),
                Audited::PairingRefused { by: by.clone() },
            );
            return Err(PairError::Unknown);
        };
        let gateway = &pending.conversation.gateway;
        if approver && !self.makes_approvers_on(by, gateway) {
            let refused = PairError::ApproverElsewhere(gateway.clone());
            tracing::info!(by = %by, %gateway, "refused to make an approver on another gateway");
            (self.codes.lock().unwrap_or_else(PoisonError::into_inner)).put_back(code, pending);
            return Err(refused);
        }
        let person = PairedPerson {
            gateway: pending.conversation.gateway.clone(),
            user: pending.user.clone(),
            approver,
            at_ms: now_ms,
            by: by.clone(),
            names: pending.names.clone(),
        };
        let event = AuditEvent {
            at_ms: now_ms,
            conversation: pending.conversation.clone(),
            what: Audited::Paired {
                person: person.user.clone(),
                approver,
                by: by.clone(),
                names: pending.names.clone(),
            },
        };
        let told = notices::let_in(&person, &pending.conversation);
        if let Err(error) = self
            .store
            .pair(&person, code.as_str(), &event, std::slice::from_ref(&told))
        {
            // Not used up: the owner may try it again.
            (self.codes.lock().unwrap_or_else(PoisonError::into_inner)).put_back(code, pending);
            return Err(error.into());
        }
        self.paired
            .insert(person.gateway.clone(), person.user.clone(), approver);
        tracing::info!(gateway = %person.gateway, user = %person.user, approver, by = %by, "paired");
        Ok(LetIn { person, told: told.0 })
    }

    /// Revokes the pairing of `named` (`gateway:user`) on the word of `by`.
    pub fn revoke(&self, named: &str, by: &Person) -> Result<(), PairError> {
        if !self.is_owner(by) {
            return Err(PairError::NotOwner);
        }
        let (gateway, user) = named
            .split_once(':')
            .and_then(|(gateway, user)| Some((GatewayId::new(gateway).ok()?, UserId::new(user.trim()).ok()?)))
            .ok_or_else(|| PairError::NotAPerson(named.to_owned()))?;
        if self.configured(&gateway, &user) {
            return Err(PairError::Configured(named.to_owned()));
        }
        let now_ms = self.clock.now_ms();
        let chat = ChatId::new(user.as_str()).map_err(|_| PairError::NotAPerson(named.to_owned()))?;
        let event = AuditEvent {
            at_ms: now_ms,
            conversation: ConversationKey::new(gateway.clone(), chat),
            what: Audited::Unpaired {
                person: user.clone(),
                by: by.clone(),
            },
        };
        if !self.store.unpair(&gateway, &user, &event)? {
            return Err(PairError::NotPaired(named.to_owned()));
        }
        self.paired.remove(&gateway, &user);
        tracing::info!(%gateway, user = %user, by = %by, "revoked a pairing");
        Ok(())
    }

    /// Whether the configuration names `user` on `gateway` (as a talker or
    /// an approver).
    fn configured(&self, gateway: &GatewayId, user: &UserId) -> bool {
        let named = |roster: &Roster| match roster {
            Roster::Everyone => false,
            Roster::Listed { users, .. } => users.iter().any(|u| u == user.as_str()),
        };
        self.lists
            .load()
            .iter()
            .filter(|l| l.gateway == *gateway)
            .any(|l| named(&l.talkers) || named(&l.deciders))
            || self
                .global
                .load()
                .iter()
                .any(|(g, u)| g == gateway.as_str() && u == user.as_str())
    }
}

/// Forgets the expired codes, in the store too.
fn forget_expired(store: &Store, codes: &mut Codes, now_ms: u64) {
    let expired: Vec<String> = codes
        .sweep(now_ms)
        .iter()
        .map(|code| code.as_str().to_owned())
        .collect();
    if expired.is_empty() {
        return;
    }
    if let Err(error) = store.forget_pairing_codes(&expired) {
        tracing::error!(%error, "cannot forget expired pairing codes");
    }
}

/// What an owner is told when a code was approved.
pub fn paired_message(person: &PairedPerson) -> String {
    let approver = if person.approver { ", as an approver" } else { "" };
    let who = crate::people::named(&person.gateway, &person.user, &person.names);
    format!("{who} is let in{approver}; they were told so.")
}

/// A notice of pairing's own into `inbound`'s conversation.
fn notice(inbound: &Inbound, in_reply_to: Option<MessageId>, text: String) -> Outbound {
    crate::foundation::notices::outside(inbound, "pairing", in_reply_to, text)
}

#[cfg(test)]
mod tests;
