//! Memory: facts a person asked the assistant to keep, scoped to that person.
//! A person linked across channels, talking in one of their private
//! conversations, also sees what they told the assistant on the others
//! ([`MemorySession::linked_with`]); what they remember is kept with the
//! account they said it on, and forgetting finds a fact wherever it is.
//! In a group, where everyone reads the answer, nothing kept before is read
//! ([`MemorySession::unread`]) unless `memory.facts_in_groups` names it.
//!
//! A [`MemorySession`] is one turn's view: it reads the committed facts from
//! the store and stages the turn's own `remember` / `forget_fact` calls, which
//! later calls in the same turn already see. The staged writes are committed
//! with the turn ([`MemorySession::writes`]), so a turn that fails or panics
//! leaves memory as it was. [`relevant`] picks the facts that go into the
//! model's context.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use passepartout_gateway::{GatewayId, UserId};
use thiserror::Error;

use crate::foundation::clock::Clock;
use crate::foundation::ranking::Bm25;
use crate::store::{Fact, MemoryScope, MemoryWrite, Store, StoreError};

/// Why a memory operation did not happen.
#[derive(Debug, Error)]
pub enum MemoryError {
    #[error("a fact must not be empty")]
    Empty,
    #[error("a fact may be at most {limit} characters long")]
    TooLong { limit: usize },
    #[error("this person already has {limit} facts; forget some first")]
    Full { limit: usize },
    #[error("no fact with id {0}")]
    NoSuchFact(u64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Limits on what one person can keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimits {
    pub max_facts: usize,
    pub max_fact_chars: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        use crate::config::{DEFAULT_MAX_FACT_CHARS, DEFAULT_MAX_FACTS};
        Self {
            max_facts: DEFAULT_MAX_FACTS,
            max_fact_chars: DEFAULT_MAX_FACT_CHARS,
        }
    }
}

#[derive(Debug, Default)]
struct Staged {
    remembered: Vec<Fact>,
    /// By id, with the scope each was kept in.
    forgotten: BTreeMap<u64, MemoryScope>,
}

/// One turn's memory for one person. Clones share the staged writes.
#[derive(Clone, Debug)]
pub struct MemorySession {
    store: Store,
    /// Dates the facts remembered.
    clock: Clock,
    scope: MemoryScope,
    /// The same person's accounts on other channels, read too.
    linked: Vec<(GatewayId, UserId)>,
    /// Whether the facts kept before this turn are read (not in a group,
    /// unless `memory.facts_in_groups` names it).
    kept_read: bool,
    limits: MemoryLimits,
    staged: Arc<Mutex<Staged>>,
}

impl MemorySession {
    pub fn new(store: Store, clock: Clock, gateway: &GatewayId, user: &UserId) -> Self {
        Self::with_limits(store, clock, gateway, user, MemoryLimits::default())
    }

    pub fn with_limits(store: Store, clock: Clock, gateway: &GatewayId, user: &UserId, limits: MemoryLimits) -> Self {
        Self {
            store,
            clock,
            scope: MemoryScope::new(gateway, user),
            linked: Vec::new(),
            kept_read: true,
            limits,
            staged: Arc::new(Mutex::new(Staged::default())),
        }
    }

    /// The same session, reading the facts of the same person's `others`
    /// accounts too (a linked person in one of their private conversations).
    pub fn linked_with(self, others: Vec<(GatewayId, UserId)>) -> Self {
        Self { linked: others, ..self }
    }

    /// The same session, reading none of the facts kept before this turn
    /// (a turn in a group, where everyone would read what it says): only
    /// what the turn itself remembers. What it remembers is still kept.
    pub fn unread(self) -> Self {
        Self {
            kept_read: false,
            linked: Vec::new(),
            ..self
        }
    }

    /// The same person's accounts on other channels this session reads.
    pub fn linked(&self) -> &[(GatewayId, UserId)] {
        &self.linked
    }

    /// The store this session reads: history search reads the
    /// conversation's turns from it.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn staged(&self) -> std::sync::MutexGuard<'_, Staged> {
        // A panic while holding this lock ends the turn anyway; its writes are dropped.
        self.staged.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The person's facts as this turn sees them, oldest first.
    pub fn facts(&self) -> Result<Vec<Fact>, MemoryError> {
        let mut facts: Vec<Fact> = self.scoped_facts(true)?.into_iter().map(|(_, fact)| fact).collect();
        facts.sort_by_key(|fact| fact.id);
        Ok(facts)
    }

    /// The committed facts of the person's own scope (and, `with_linked`,
    /// of their linked accounts' too), each with its scope, less those
    /// staged to be forgotten, and the staged new ones.
    fn scoped_facts(&self, with_linked: bool) -> Result<Vec<(MemoryScope, Fact)>, MemoryError> {
        let linked = self.linked.iter().filter(|_| with_linked);
        let scopes =
            std::iter::once(self.scope.clone()).chain(linked.map(|(gateway, user)| MemoryScope::new(gateway, user)));
        let mut facts = Vec::new();
        for scope in scopes.filter(|_| self.kept_read) {
            facts.extend(self.store.facts(&scope)?.into_iter().map(|fact| (scope.clone(), fact)));
        }
        let staged = self.staged();
        facts.retain(|(_, fact)| !staged.forgotten.contains_key(&fact.id));
        facts.extend(staged.remembered.iter().map(|fact| (self.scope.clone(), fact.clone())));
        Ok(facts)
    }

    /// Stages a new fact.
    pub fn remember(&self, text: &str) -> Result<Fact, MemoryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        if text.chars().count() > self.limits.max_fact_chars {
            return Err(MemoryError::TooLong {
                limit: self.limits.max_fact_chars,
            });
        }
        // Only the facts kept with this account count against its limit
        // (those not read in this turn too).
        let kept = self.store.facts(&self.scope)?;
        let count = {
            let staged = self.staged();
            let kept = kept
                .iter()
                .filter(|fact| !staged.forgotten.contains_key(&fact.id))
                .count();
            kept + staged.remembered.len()
        };
        if count >= self.limits.max_facts {
            return Err(MemoryError::Full {
                limit: self.limits.max_facts,
            });
        }
        let fact = Fact {
            id: self.store.fact_id()?,
            text: text.to_owned(),
            created_ms: self.clock.now_ms(),
        };
        self.staged().remembered.push(fact.clone());
        Ok(fact)
    }

    /// Stages forgetting fact `id`; returns what it said.
    pub fn forget(&self, id: u64) -> Result<Fact, MemoryError> {
        let (scope, fact) = self
            .scoped_facts(true)?
            .into_iter()
            .find(|(_, fact)| fact.id == id)
            .ok_or(MemoryError::NoSuchFact(id))?;
        let mut staged = self.staged();
        let before = staged.remembered.len();
        staged.remembered.retain(|fact| fact.id != id);
        if staged.remembered.len() == before {
            staged.forgotten.insert(id, scope);
        }
        Ok(fact)
    }

    /// The writes to commit with the turn.
    pub fn writes(&self) -> Vec<MemoryWrite> {
        let staged = self.staged();
        let forgets = staged.forgotten.iter().map(|(&id, scope)| MemoryWrite::Forget {
            scope: scope.clone(),
            id,
        });
        let remembers = staged.remembered.iter().map(|fact| MemoryWrite::Remember {
            scope: self.scope.clone(),
            fact: fact.clone(),
        });
        forgets.chain(remembers).collect()
    }
}

/// Up to `limit` of `facts` most related to `text`, ranked by BM25 over
/// their words ([`crate::foundation::ranking`]), newer before older on a tie. Facts
/// sharing no word come last, newest first, so a person with few facts has
/// all of them in context.
pub fn relevant(facts: Vec<Fact>, text: &str, limit: usize) -> Vec<Fact> {
    let scores = Bm25::for_query(facts.iter().map(|fact| fact.text.as_str()), text).scores(text);
    let mut scored: Vec<(f64, Fact)> = scores.into_iter().zip(facts).collect();
    scored.sort_by(|(a_score, a), (b_score, b)| b_score.total_cmp(a_score).then(b.id.cmp(&a.id)));
    scored.into_iter().take(limit).map(|(_, fact)| fact).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TurnCommit;
    use crate::store::tests_support::{conversation, open_temp};

    fn session(store: &Store, user: &str) -> MemorySession {
        MemorySession::new(
            store.clone(),
            Clock::at(1_000),
            &GatewayId::new("socket").unwrap(),
            &UserId::new(user).unwrap(),
        )
    }

    fn texts(facts: &[Fact]) -> Vec<&str> {
        facts.iter().map(|f| f.text.as_str()).collect()
    }

    // Paused time: the session's clock reads what it was given.
    #[tokio::test(start_paused = true)]
    async fn staged_facts_are_seen_at_once_and_stored_only_on_commit() {
        let (_dir, store) = open_temp();
        let turn = session(&store, "ann");
        let fact = turn.remember("likes green tea").unwrap();
        assert_eq!(fact.created_ms, 1_000, "dated by the session's clock");
        assert_eq!(texts(&turn.facts().unwrap()), ["likes green tea"]);
        assert!(session(&store, "ann").facts().unwrap().is_empty(), "not committed yet");
        let commit = TurnCommit {
            memory: turn.writes(),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), commit).unwrap();
        assert_eq!(texts(&session(&store, "ann").facts().unwrap()), ["likes green tea"]);
        assert!(
            session(&store, "bob").facts().unwrap().is_empty(),
            "facts are per person"
        );
    }

    #[test]
    fn an_unread_session_sees_only_what_its_turn_remembers() {
        let (_dir, store) = open_temp();
        let before = session(&store, "ann");
        before.remember("the locker code is 4711").unwrap();
        let commit = TurnCommit {
            memory: before.writes(),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), commit).unwrap();
        let in_group = session(&store, "ann").unread();
        assert!(in_group.facts().unwrap().is_empty(), "nothing kept is read");
        let fact = in_group.remember("the bike is blue").unwrap();
        assert_eq!(texts(&in_group.facts().unwrap()), ["the bike is blue"]);
        assert!(matches!(in_group.forget(fact.id - 1), Err(MemoryError::NoSuchFact(_))));
        assert_eq!(in_group.writes().len(), 1, "what it remembers is kept");
    }

    #[test]
    fn forgetting_a_staged_fact_leaves_no_write() {
        let (_dir, store) = open_temp();
        let turn = session(&store, "ann");
        let fact = turn.remember("x marks the spot").unwrap();
        turn.forget(fact.id).unwrap();
        assert!(turn.writes().is_empty());
        assert!(matches!(turn.forget(fact.id), Err(MemoryError::NoSuchFact(_))));
    }

    #[test]
    fn a_linked_session_reads_every_account_writes_its_own_and_forgets_anywhere() {
        let (_dir, store) = open_temp();
        let telegram = (GatewayId::new("telegram").unwrap(), UserId::new("42").unwrap());
        let on_telegram = MemorySession::new(store.clone(), Clock::at(1_000), &telegram.0, &telegram.1);
        let told = on_telegram.remember("the bike lock code is 4711").unwrap();
        let commit = |turn: &MemorySession| {
            let commit = TurnCommit {
                memory: turn.writes(),
                ..TurnCommit::default()
            };
            store.commit_turn(&conversation("c"), commit).unwrap();
        };
        commit(&on_telegram);
        let linked = || session(&store, "ann").linked_with(vec![telegram.clone()]);
        assert_eq!(texts(&linked().facts().unwrap()), ["the bike lock code is 4711"]);
        assert!(
            session(&store, "ann").facts().unwrap().is_empty(),
            "unlinked, nothing crosses"
        );
        let here = linked();
        here.remember("prefers tea").unwrap();
        commit(&here);
        let on_telegram = MemorySession::new(store.clone(), Clock::at(1_000), &telegram.0, &telegram.1);
        assert_eq!(
            texts(&on_telegram.facts().unwrap()),
            ["the bike lock code is 4711"],
            "kept with the account it was said on"
        );
        let here = linked();
        assert_eq!(here.forget(told.id).unwrap().text, "the bike lock code is 4711");
        commit(&here);
        assert!(on_telegram.facts().unwrap().is_empty(), "forgotten where it was kept");
        assert_eq!(texts(&linked().facts().unwrap()), ["prefers tea"]);
    }

    #[test]
    fn a_linked_persons_other_facts_do_not_count_against_the_limit() {
        let (_dir, store) = open_temp();
        let telegram = (GatewayId::new("telegram").unwrap(), UserId::new("42").unwrap());
        let on_telegram = MemorySession::new(store.clone(), Clock::at(1_000), &telegram.0, &telegram.1);
        on_telegram.remember("one").unwrap();
        let commit = TurnCommit {
            memory: on_telegram.writes(),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), commit).unwrap();
        let limits = MemoryLimits {
            max_facts: 1,
            max_fact_chars: 50,
        };
        let ann = UserId::new("ann").unwrap();
        let here = MemorySession::with_limits(store, Clock::at(1), &GatewayId::new("socket").unwrap(), &ann, limits)
            .linked_with(vec![telegram]);
        here.remember("two").unwrap();
        assert!(matches!(here.remember("three"), Err(MemoryError::Full { limit: 1 })));
    }

    #[test]
    fn limits_are_enforced() {
        let (_dir, store) = open_temp();
        let limits = MemoryLimits {
            max_facts: 1,
            max_fact_chars: 5,
        };
        let turn = MemorySession::with_limits(
            store,
            Clock::at(1_000),
            &GatewayId::new("socket").unwrap(),
            &UserId::new("ann").unwrap(),
            limits,
        );
        assert!(matches!(turn.remember("  "), Err(MemoryError::Empty)));
        assert!(matches!(
            turn.remember("toolong"),
            Err(MemoryError::TooLong { limit: 5 })
        ));
        turn.remember("ok").unwrap();
        assert!(matches!(turn.remember("full"), Err(MemoryError::Full { limit: 1 })));
    }

    #[test]
    fn relevant_facts_share_words_with_the_message() {
        let fact = |id, text: &str| Fact {
            id,
            text: text.into(),
            created_ms: 0,
        };
        let facts = vec![
            fact(1, "Ann's cat is called Miso"),
            fact(2, "Ann likes tea"),
            fact(3, "Bike code 4711"),
        ];
        let picked = relevant(facts, "what is my cat called?", 2);
        assert_eq!(texts(&picked), ["Ann's cat is called Miso", "Bike code 4711"]);
    }

    fn facts(texts: &[&str]) -> Vec<Fact> {
        texts
            .iter()
            .enumerate()
            .map(|(id, text)| Fact {
                id: id as u64 + 1,
                text: (*text).into(),
                created_ms: 0,
            })
            .collect()
    }

    #[test]
    fn english_plurals_find_the_singular() {
        let picked = relevant(
            facts(&[
                "Dentist appointment on Friday at 10",
                "Ann likes green tea",
                "The car needs new tyres",
            ]),
            "what appointments do I have?",
            1,
        );
        assert_eq!(texts(&picked), ["Dentist appointment on Friday at 10"]);
    }

    #[test]
    fn german_plurals_find_the_singular() {
        let picked = relevant(
            facts(&[
                "Der Termin beim Zahnarzt ist am Freitag",
                "Anna trinkt gern grünen Tee",
                "Das Auto braucht neue Reifen",
            ]),
            "Welche Termine habe ich?",
            1,
        );
        assert_eq!(texts(&picked), ["Der Termin beim Zahnarzt ist am Freitag"]);
    }

    #[test]
    fn chinese_facts_are_found_without_spaces() {
        let picked = relevant(
            facts(&["我喜欢喝绿茶", "我喜欢看电影", "我的猫叫小米", "明天下午三点开会"]),
            "我喜欢什么茶",
            4,
        );
        assert_eq!(texts(&picked)[0], "我喜欢喝绿茶");
        assert_eq!(texts(&picked)[1], "我喜欢看电影", "shares 我喜欢 but not 茶");
    }

    #[test]
    fn japanese_facts_are_found_without_spaces() {
        let picked = relevant(
            facts(&["私は緑茶が好きです", "猫の名前はミソです", "明日は会議があります"]),
            "好きなお茶は何ですか",
            1,
        );
        assert_eq!(texts(&picked), ["私は緑茶が好きです"]);
    }
}
