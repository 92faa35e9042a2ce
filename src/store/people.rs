//! The `people` and `identities` trees: people linked across channels.
//! `people` keeps each person by their number (big-endian); `identities`
//! points each linked account (`gateway 0x00 user`) at its person, so a
//! turn finds whom its sender is linked with in one read. Both change only
//! together, in one transaction with the audit event and the notices that
//! tell the person, so an account is never in two people nor pointing at
//! one that is gone.

use std::collections::BTreeSet;

use passepartout_gateway::{ConversationKey, GatewayId, OutboundBody, UserId};
use sled::Transactional;
use sled::transaction::TransactionalTree;

use super::approvals::{Abort, abort, audit_in, decode, encode};
use super::error::StoreError;
use super::outbox::put_notices;
use super::records::{AuditEvent, Identity, LinkedPerson};
use super::{Store, keys};

/// What [`Store::link`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linked {
    /// The two are one person now (a new one, or one of them grown, or two
    /// people merged into one).
    Now(LinkedPerson),
    /// They were one person already; nothing changed but the code used up.
    Already(LinkedPerson),
}

fn identity_key(gateway: &GatewayId, user: &UserId) -> Vec<u8> {
    let mut key = gateway.as_str().as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(user.as_str().as_bytes());
    key
}

fn person_in(
    people: &TransactionalTree,
    identities: &TransactionalTree,
    identity: &Identity,
) -> Result<Option<LinkedPerson>, Abort> {
    match identities.get(identity_key(&identity.gateway, &identity.user))? {
        Some(id) => numbered(people, &id),
        None => Ok(None),
    }
}

/// The person kept under `id` (a number, big-endian), if any.
fn numbered(people: &TransactionalTree, id: &[u8]) -> Result<Option<LinkedPerson>, Abort> {
    match people.get(id)? {
        Some(value) => decode("people", &value).map(Some).map_err(abort),
        None => Ok(None),
    }
}

/// Puts `person` and their identities' pointers in the trees.
fn write_person(
    people: &TransactionalTree,
    identities: &TransactionalTree,
    person: &LinkedPerson,
) -> Result<(), Abort> {
    let value = encode("people", person).map_err(abort)?;
    people.insert(&keys::seq(person.id), value)?;
    for identity in &person.identities {
        identities.insert(identity_key(&identity.gateway, &identity.user), &keys::seq(person.id))?;
    }
    Ok(())
}

/// Takes `person` out of the trees, and their identities' pointers.
fn remove_person(
    people: &TransactionalTree,
    identities: &TransactionalTree,
    person: &LinkedPerson,
) -> Result<(), Abort> {
    people.remove(&keys::seq(person.id))?;
    for identity in &person.identities {
        identities.remove(identity_key(&identity.gateway, &identity.user))?;
    }
    Ok(())
}

/// `person` without the identities `gone`; none when fewer than two would be left.
fn without(person: &LinkedPerson, gone: &BTreeSet<String>) -> Option<LinkedPerson> {
    let identities: Vec<Identity> = person
        .identities
        .iter()
        .filter(|identity| !gone.contains(&identity.label()))
        .cloned()
        .collect();
    (identities.len() >= 2).then(|| LinkedPerson {
        identities,
        ..person.clone()
    })
}

impl Store {
    /// Person number `id`, if they exist.
    pub fn person(&self, id: u64) -> Result<Option<LinkedPerson>, StoreError> {
        match self.inner.people.get(keys::seq(id))? {
            Some(value) => decode("people", &value).map(Some),
            None => Ok(None),
        }
    }

    /// The person whose linked private conversation `conversation` is.
    /// Reads every person: for what comes unasked, not for each turn.
    pub fn linked_in(&self, conversation: &ConversationKey) -> Result<Option<LinkedPerson>, StoreError> {
        Ok(self
            .people()?
            .into_iter()
            .find(|person| person.speaking_in(conversation).is_some()))
    }

    /// What comes unasked for person `id` goes to `conversation` first
    /// (`/here`); the person as they are now, or `None` when `id` is no
    /// longer linked there.
    pub fn prefer(&self, id: u64, conversation: &ConversationKey) -> Result<Option<LinkedPerson>, StoreError> {
        let _writing = self.writing();
        let preferred = self.inner.people.transaction(|people| {
            let Some(mut person) = numbered(people, &keys::seq(id))?.filter(|p| p.speaking_in(conversation).is_some())
            else {
                return Ok(None);
            };
            person.preferred = Some(conversation.clone());
            people.insert(&keys::seq(id), encode("people", &person).map_err(abort)?)?;
            Ok(Some(person))
        });
        self.wrote(preferred.map_err(StoreError::from))
    }

    /// Everyone linked, by their number.
    pub fn people(&self) -> Result<Vec<LinkedPerson>, StoreError> {
        self.inner
            .people
            .iter()
            .values()
            .map(|value| decode("people", &value?))
            .collect()
    }

    /// The person `user` on `gateway` is linked as, if any.
    pub fn person_of(&self, gateway: &GatewayId, user: &UserId) -> Result<Option<LinkedPerson>, StoreError> {
        let Some(id) = self.inner.identities.get(identity_key(gateway, user))? else {
            return Ok(None);
        };
        match self.inner.people.get(&id)? {
            Some(value) => decode("people", &value).map(Some),
            None => Ok(None),
        }
    }

    /// Makes `asked` (who asked for `code`) and `named` (who named it) one
    /// person, using the code up, with the audit event `event` makes of the
    /// person's number, and `notices` put in the outbox.
    pub fn link(
        &self,
        code: &str,
        asked: &Identity,
        named: &Identity,
        event: impl Fn(u64) -> AuditEvent,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<Linked, StoreError> {
        let _writing = self.writing();
        let fresh = self.next_id()?;
        let notices = self.prepare_notices(notices)?;
        let trees = (
            &self.inner.people,
            &self.inner.identities,
            &self.inner.link_codes,
            &self.inner.audit,
            &self.inner.outbox,
        );
        let linked = trees.transaction(|(people, identities, codes, audit, outbox)| {
            codes.remove(code.as_bytes())?;
            let first = person_in(people, identities, asked)?;
            let second = person_in(people, identities, named)?;
            let person = match (first, second) {
                (Some(a), Some(b)) if a.id == b.id => return Ok(Linked::Already(a)),
                (Some(a), Some(b)) => {
                    // Two people become one, under the older number.
                    let (mut kept, gone) = if a.id < b.id { (a, b) } else { (b, a) };
                    remove_person(people, identities, &gone)?;
                    kept.identities.extend(gone.identities);
                    kept
                }
                (Some(mut a), None) => {
                    a.identities.push(named.clone());
                    a
                }
                (None, Some(mut b)) => {
                    b.identities.push(asked.clone());
                    b
                }
                (None, None) => LinkedPerson {
                    id: fresh,
                    identities: vec![asked.clone(), named.clone()],
                    created_ms: named.at_ms,
                    preferred: None,
                },
            };
            write_person(people, identities, &person)?;
            put_notices(outbox, &notices)?;
            audit_in(audit, &event(person.id))?;
            Ok(Linked::Now(person))
        });
        self.wrote(linked.map_err(StoreError::from))
    }

    /// Takes the identities labelled `gone` (`gateway:user`) out of person
    /// number `id` (the whole person when fewer than two would be left),
    /// with `event` and `notices`; the person as they were, if they exist.
    pub fn unlink(
        &self,
        id: u64,
        gone: &BTreeSet<String>,
        event: &AuditEvent,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<Option<LinkedPerson>, StoreError> {
        let _writing = self.writing();
        let notices = self.prepare_notices(notices)?;
        let trees = (
            &self.inner.people,
            &self.inner.identities,
            &self.inner.audit,
            &self.inner.outbox,
        );
        let unlinked = trees.transaction(|(people, identities, audit, outbox)| {
            let Some(person) = numbered(people, &keys::seq(id))? else {
                return Ok(None);
            };
            remove_person(people, identities, &person)?;
            if let Some(left) = without(&person, gone) {
                write_person(people, identities, &left)?;
            }
            put_notices(outbox, &notices)?;
            audit_in(audit, event)?;
            Ok(Some(person))
        });
        self.wrote(unlinked.map_err(StoreError::from))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey};

    use super::*;
    use crate::store::records::{Audited, Person};
    use crate::store::tests::{open_temp, reopen};

    fn identity(gateway: &str, user: &str) -> Identity {
        let gateway = GatewayId::new(gateway).unwrap();
        Identity {
            conversation: ConversationKey::new(gateway.clone(), ChatId::new(user).unwrap()),
            gateway,
            user: UserId::new(user).unwrap(),
            aliases: Vec::new(),
            at_ms: 7,
            names: Default::default(),
        }
    }

    fn by(identity: &Identity) -> Person {
        Person {
            gateway: identity.gateway.clone(),
            user: identity.user.clone(),
            aliases: Vec::new(),
            names: Default::default(),
        }
    }

    fn linked(store: &Store, code: &str, asked: &Identity, named: &Identity) -> Linked {
        store.inner.link_codes.insert(code, &b"{}"[..]).unwrap();
        let event = |person| AuditEvent {
            at_ms: 7,
            conversation: named.conversation.clone(),
            what: Audited::Linked {
                person,
                by: by(named),
                with: asked.label(),
            },
        };
        let told = [(
            asked.conversation.clone(),
            OutboundBody::Text {
                text: "linked".into(),
                kind: passepartout_gateway::ReplyKind::Notice,
            },
        )];
        store.link(code, asked, named, event, &told).unwrap()
    }

    fn labels(person: &LinkedPerson) -> Vec<String> {
        person.identities.iter().map(Identity::label).collect()
    }

    #[test]
    fn two_identities_become_one_person_that_survives_a_reopen() {
        let (dir, store) = open_temp();
        let (telegram, signal) = (identity("telegram", "42"), identity("signal", "u-1"));
        let Linked::Now(person) = linked(&store, "ABCDEFGH", &telegram, &signal) else {
            panic!("not linked");
        };
        assert_eq!(labels(&person), ["telegram:42", "signal:u-1"]);
        assert!(store.link_codes().unwrap().is_empty(), "the code is used up");
        assert!(store.has_outbox(&telegram.conversation), "the asking side is told");
        assert_eq!(store.audit_events(10).unwrap().len(), 1);
        drop(store);
        let store = reopen(&dir.path().join("store"));
        let found = store.person_of(&signal.gateway, &signal.user).unwrap().unwrap();
        assert_eq!(found, person);
        assert_eq!(store.people().unwrap(), [person]);
        assert_eq!(
            store.person_of(&signal.gateway, &UserId::new("u-2").unwrap()).unwrap(),
            None
        );
    }

    #[test]
    fn a_third_identity_joins_and_two_people_merge_under_the_older_number() {
        let (_dir, store) = open_temp();
        let (a, b, c, d) = (
            identity("telegram", "1"),
            identity("signal", "2"),
            identity("web", "owner"),
            identity("socket", "1000"),
        );
        let Linked::Now(first) = linked(&store, "AAAAAAAA", &a, &b) else {
            panic!()
        };
        let Linked::Now(grown) = linked(&store, "BBBBBBBB", &c, &a) else {
            panic!()
        };
        assert_eq!(grown.id, first.id);
        assert_eq!(labels(&grown), ["telegram:1", "signal:2", "web:owner"]);
        assert_eq!(
            linked(&store, "CCCCCCCC", &b, &c),
            Linked::Already(grown.clone()),
            "linking two of one person changes nothing"
        );
        let other = identity("telegram", "9");
        let Linked::Now(second) = linked(&store, "DDDDDDDD", &d, &other) else {
            panic!()
        };
        assert!(second.id > first.id);
        let Linked::Now(merged) = linked(&store, "EEEEEEEE", &other, &b) else {
            panic!()
        };
        assert_eq!(merged.id, first.id, "the older number is kept");
        assert_eq!(merged.identities.len(), 5);
        assert_eq!(
            store.people().unwrap(),
            std::slice::from_ref(&merged),
            "the younger person is gone"
        );
        assert_eq!(store.person_of(&d.gateway, &d.user).unwrap(), Some(merged));
    }

    #[test]
    fn unlinking_takes_identities_out_and_a_person_of_one_is_no_person() {
        let (_dir, store) = open_temp();
        let (a, b, c) = (
            identity("telegram", "1"),
            identity("signal", "2"),
            identity("web", "owner"),
        );
        linked(&store, "AAAAAAAA", &a, &b);
        let Linked::Now(person) = linked(&store, "BBBBBBBB", &c, &a) else {
            panic!()
        };
        let event = AuditEvent {
            at_ms: 9,
            conversation: c.conversation.clone(),
            what: Audited::Unlinked {
                person: person.id,
                identities: vec![c.label()],
                by: by(&c),
            },
        };
        let gone = BTreeSet::from([c.label()]);
        assert_eq!(
            store.unlink(person.id, &gone, &event, &[]).unwrap(),
            Some(person.clone())
        );
        assert_eq!(store.person_of(&c.gateway, &c.user).unwrap(), None);
        assert_eq!(
            labels(&store.person_of(&a.gateway, &a.user).unwrap().unwrap()),
            ["telegram:1", "signal:2"]
        );
        let gone = BTreeSet::from([b.label()]);
        store.unlink(person.id, &gone, &event, &[]).unwrap();
        assert!(
            store.people().unwrap().is_empty(),
            "one identity is not a linked person"
        );
        assert_eq!(store.person_of(&a.gateway, &a.user).unwrap(), None);
        assert_eq!(
            store.unlink(person.id, &gone, &event, &[]).unwrap(),
            None,
            "gone already"
        );
        assert_eq!(store.audit_events(10).unwrap().len(), 4, "two links and two unlinks");
    }
}
