//! Linking: one person across channels.
//!
//! `/link` in a private chat answers with a one-time code ([`Linking::ask`]);
//! naming it on another channel (`/link CODE` there, or `passepartout link
//! CODE` at the terminal) makes the two accounts one person
//! ([`Linking::name`]), and both sides are told. Only accounts that may
//! talk to the assistant take part (the intake refuses everyone else before
//! a command is read), and only from a private conversation: in a group the
//! code would be read by everyone. `/unlink` takes the account out again;
//! the terminal's `passepartout people unlink` takes out anyone.
//!
//! The commands are answered by the intake and never journaled, so no code
//! reaches the model or the history. Codes are kept in the store, so a
//! restart voids none; asking again voids the earlier one. A wrong code and
//! an expired one read the same, and someone who names too many wrong codes
//! in an hour has further codes refused unread, as with approval tokens.
//! A code named anywhere but a private chat (a group, someone else's chat)
//! is void at once, whoever named it and whether or not the assistant was
//! addressed ([`Linking::void_said_in_the_open`]); whoever asked for it is
//! told in their own chat.
//!
//! What linking gives a person (memory and history across their private
//! conversations, their own approvals answered from any of them) is read
//! from the store by the turn that needs it.

mod chat;
pub mod command;
pub(crate) mod words;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use passepartout_gateway::{ConversationKey, GatewayId, Inbound, Sender, UserId};
use thiserror::Error;

use crate::foundation::clock::Clock;
use crate::people::access::Access;
use crate::people::guesses::{Guesses, Secret};
use crate::people::pairing::Code;
use crate::people::pairing::codes::{self, Codes, Waits};
use crate::store::{AuditEvent, Audited, Identity, Linked, LinkedPerson, Names, Person, Store, StoreError};

pub use chat::Answer;
pub use command::LinkCommand;
pub use words::terminal_code_text;

/// How long a link code lives.
pub const EXPIRE_MS: u64 = 10 * 60_000;

/// Why a code was not issued or named, or nobody unlinked. The messages are
/// for the person; a wrong code and an expired one read the same.
#[derive(Debug, Error)]
pub enum LinkError {
    #[error("link from a private chat with me, not from a group: everyone here would see the code")]
    Group,
    #[error("no such link code (or it expired)")]
    Unknown,
    #[error("too many wrong link codes in the last hour; try again later")]
    Limited,
    #[error("that code is this channel's own; name it on your other channel")]
    Own,
    #[error("the channel that asked for this code may no longer talk to me")]
    NotAllowed,
    #[error("this channel is not linked with another")]
    NotLinked,
    #[error("no linked person {0} (see passepartout people)")]
    NoSuchPerson(String),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

impl Waits for Identity {
    fn issued_ms(&self) -> u64 {
        self.at_ms
    }

    fn same_person(&self, other: &Self) -> bool {
        self.is(&other.gateway, &other.user)
    }
}

/// The linking desk: codes waiting, and who may link.
pub struct Linking {
    codes: Mutex<Codes<Identity>>,
    access: Arc<Access>,
    /// Wrong codes named, at most `approvals.wrong_tokens_per_hour` per person.
    guesses: Guesses,
    store: Store,
    clock: Clock,
}

impl Linking {
    /// Loading the codes issued before, forgetting expired and unreadable
    /// ones (never logged).
    pub fn new(store: Store, clock: Clock, access: Arc<Access>, wrong_per_hour: u32) -> Result<Self, StoreError> {
        let (kept, mut forgotten) = codes::restore(store.link_codes()?, true);
        let mut codes = Codes::new(EXPIRE_MS, usize::MAX, kept);
        forgotten.extend(codes.sweep(clock.now_ms()).iter().map(|code| code.as_str().to_owned()));
        if !forgotten.is_empty() {
            store.forget_link_codes(&forgotten)?;
        }
        Ok(Self {
            codes: Mutex::new(codes),
            access,
            guesses: Guesses::new(store.clone(), Secret::LinkCode, wrong_per_hour),
            store,
            clock,
        })
    }

    /// The identity `inbound`'s sender has in its conversation, if that is
    /// a private one: the chat is the sender's own (a direct chat), or the
    /// gateway admits only its owner (the terminal, the web).
    pub fn identity_of(&self, inbound: &Inbound) -> Result<Identity, LinkError> {
        let chat = inbound.conversation.chat.as_str();
        let direct = inbound.sender.ids().any(|id| id.as_str() == chat);
        if !direct && !self.access.vouches(&inbound.conversation.gateway) {
            return Err(LinkError::Group);
        }
        Ok(Identity {
            gateway: inbound.conversation.gateway.clone(),
            user: inbound.sender.id.clone(),
            aliases: inbound.sender.aliases.clone(),
            conversation: inbound.conversation.clone(),
            at_ms: self.clock.now_ms(),
            names: Names::of(&inbound.sender),
        })
    }

    /// A fresh code for `identity`, voiding the one they had.
    pub fn ask(&self, identity: Identity) -> Result<Code, LinkError> {
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stale: Vec<String> = codes
            .sweep(identity.at_ms)
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect();
        let (code, voided) = codes.reissue(identity.clone());
        stale.extend(voided.iter().map(|c| c.as_str().to_owned()));
        if let Err(error) = self.store.keep_link_code(code.as_str(), &identity, &stale) {
            codes.take(&code, identity.at_ms);
            return Err(error.into());
        }
        tracing::info!(gateway = %identity.gateway, user = %identity.user, "issued a link code");
        Ok(code)
    }

    /// Links `named` (who typed `typed`) with whoever asked for that code,
    /// `by` them, telling the asking side in its outbox.
    pub fn name(&self, typed: &str, named: &Identity, by: &Person) -> Result<(Linked, Identity), LinkError> {
        let now_ms = self.clock.now_ms();
        if self.guesses.is_limited(by, now_ms) {
            return Err(LinkError::Limited);
        }
        let taken = Code::parse(typed).and_then(|code| {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            Some((codes.take(&code, now_ms)?, code))
        });
        let Some((asked, code)) = taken else {
            self.guesses.record(by, now_ms);
            tracing::info!(by = %by, "refused an unknown link code");
            crate::people::audit::alone(
                &self.store,
                now_ms,
                named.conversation.clone(),
                Audited::LinkRefused { by: by.clone() },
            );
            return Err(LinkError::Unknown);
        };
        let kept = asked.clone();
        let put_back = |error| {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            codes.put_back(code.clone(), kept.clone());
            error
        };
        if asked.is(&named.gateway, &named.user) {
            return Err(put_back(LinkError::Own));
        }
        let mut asker = Sender::new(asked.user.clone());
        asker.aliases = asked.aliases.clone();
        if !self.access.allows_in(&asked.conversation, &asker) {
            self.forget(&[code]);
            return Err(LinkError::NotAllowed);
        }
        let asked = Identity { at_ms: now_ms, ..asked };
        let event = |person| AuditEvent {
            at_ms: now_ms,
            conversation: named.conversation.clone(),
            what: Audited::Linked {
                person,
                by: by.clone(),
                with: asked.label(),
            },
        };
        let told = [words::linked(&asked, named), words::linked(named, &asked)];
        let linked = self
            .store
            .link(code.as_str(), &asked, named, event, &told)
            .map_err(|error| put_back(error.into()))?;
        tracing::info!(asked = %asked.label(), named = %named.label(), "linked two identities");
        Ok((linked, asked))
    }

    /// Voids `typed`, if it is a live code: it was named where others read
    /// it. Whoever asked for it, if anyone.
    pub fn void(&self, typed: &str) -> Option<Identity> {
        let code = Code::parse(typed)?;
        let taken = {
            let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
            codes.take(&code, self.clock.now_ms())
        };
        if taken.is_some() {
            tracing::info!("voided a link code named in a group");
            self.forget(&[code]);
        }
        taken
    }

    fn forget(&self, codes: &[Code]) {
        let codes: Vec<String> = codes.iter().map(|code| code.as_str().to_owned()).collect();
        if let Err(error) = self.store.forget_link_codes(&codes) {
            tracing::error!(%error, "cannot forget a link code");
        }
    }

    /// Takes `user` on `gateway` out of the person they are linked as, on
    /// their own word, telling the others; the person as they were.
    pub fn unlink_self(&self, gateway: &GatewayId, user: &UserId, by: &Person) -> Result<LinkedPerson, LinkError> {
        let person = self.store.person_of(gateway, user)?.ok_or(LinkError::NotLinked)?;
        let identity = person.identity(gateway, user).cloned().ok_or(LinkError::NotLinked)?;
        self.unlink(
            &person,
            BTreeSet::from([identity.label()]),
            identity.conversation.clone(),
            by,
        )
    }

    /// Unlinks `named` on the terminal owner's word: a person's number (all
    /// of them come apart) or `gateway:user` (that account only).
    pub fn unlink_named(&self, named: &str, by: &Person, at: &ConversationKey) -> Result<LinkedPerson, LinkError> {
        let unknown = || LinkError::NoSuchPerson(named.to_owned());
        let (person, gone) = match named.trim().parse::<u64>() {
            Ok(id) => {
                let person = self
                    .store
                    .people()?
                    .into_iter()
                    .find(|p| p.id == id)
                    .ok_or_else(unknown)?;
                let all = person.identities.iter().map(Identity::label).collect();
                (person, all)
            }
            Err(_) => {
                let (gateway, user) = named
                    .trim()
                    .split_once(':')
                    .and_then(|(g, u)| Some((GatewayId::new(g).ok()?, UserId::new(u).ok()?)))
                    .ok_or_else(unknown)?;
                let person = self.store.person_of(&gateway, &user)?.ok_or_else(unknown)?;
                (person, BTreeSet::from([named.trim().to_owned()]))
            }
        };
        self.unlink(&person, gone, at.clone(), by)
    }

    fn unlink(
        &self,
        person: &LinkedPerson,
        gone: BTreeSet<String>,
        at: ConversationKey,
        by: &Person,
    ) -> Result<LinkedPerson, LinkError> {
        let event = AuditEvent {
            at_ms: self.clock.now_ms(),
            conversation: at,
            what: Audited::Unlinked {
                person: person.id,
                identities: gone.iter().cloned().collect(),
                by: by.clone(),
            },
        };
        let told = words::unlinked_notices(person, &gone);
        let was = self
            .store
            .unlink(person.id, &gone, &event, &told)?
            .ok_or_else(|| LinkError::NoSuchPerson(person.id.to_string()))?;
        tracing::info!(person = person.id, identities = ?gone, "unlinked");
        Ok(was)
    }

    /// Everyone linked.
    pub fn people(&self) -> Result<Vec<LinkedPerson>, StoreError> {
        self.store.people()
    }
}

#[cfg(test)]
mod tests;
