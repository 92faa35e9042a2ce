//! One-time codes waiting to be named: one live code per person at most, so
//! someone who keeps writing is sent one code per expiry window, not one
//! per message. A code is used once; an expired one is as unknown as a code
//! never issued. The desks keep them in the store as well, so a code sent
//! before a restart still works after it (see [`super::Pairing`], and the
//! link codes of [`crate::people::linking`]).

use std::collections::HashMap;

pub use crate::store::PendingPairing as Pending;

use super::code::Code;
use crate::store::StoreError;

/// What a code was issued for.
pub trait Waits: Clone {
    /// When the code was issued, in milliseconds since the Unix epoch.
    fn issued_ms(&self) -> u64;
    /// Whether `other` is for the same person.
    fn same_person(&self, other: &Self) -> bool;
}

impl Waits for Pending {
    fn issued_ms(&self) -> u64 {
        self.issued_ms
    }

    fn same_person(&self, other: &Self) -> bool {
        self.user == other.user && self.conversation.gateway == other.conversation.gateway
    }
}

/// The codes a store kept (each with its record, or why that cannot be
/// read) split into those to issue again and those to forget: the
/// unreadable ones (logged, never the code), those that are no code, and
/// all of them unless `keep`.
pub fn restore<P>(
    stored: impl IntoIterator<Item = (String, Result<P, StoreError>)>,
    keep: bool,
) -> (Vec<(Code, P)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut forgotten = Vec::new();
    for (code, record) in stored {
        match (Code::parse(&code), record) {
            (Some(parsed), Ok(record)) if keep => kept.push((parsed, record)),
            (_, Err(error)) => {
                tracing::warn!(%error, "a stored code cannot be read; it is forgotten");
                forgotten.push(code);
            }
            _ => forgotten.push(code),
        }
    }
    (kept, forgotten)
}

/// The codes issued and not used.
#[derive(Debug)]
pub struct Codes<P = Pending> {
    expire_ms: u64,
    /// Live codes at most.
    max: usize,
    issued: HashMap<Code, P>,
}

/// What [`Codes::issue`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Issued {
    /// A new code.
    New(Code),
    /// None: the person has a live code already.
    Live,
    /// None: as many codes wait as may.
    Full,
}

impl<P: Waits> Codes<P> {
    /// Codes that expire `expire_ms` after they were issued, at most `max`
    /// live at once, `kept` issued already.
    pub fn new(expire_ms: u64, max: usize, kept: impl IntoIterator<Item = (Code, P)>) -> Self {
        Self {
            expire_ms,
            max,
            issued: kept.into_iter().collect(),
        }
    }

    /// A new code for `pending`'s person, unless they have a live one or
    /// as many wait as may.
    pub fn issue(&mut self, pending: P) -> Issued {
        let now_ms = pending.issued_ms();
        if self
            .issued
            .values()
            .any(|p| p.same_person(&pending) && self.live(p, now_ms))
        {
            return Issued::Live;
        }
        if self.issued.values().filter(|p| self.live(p, now_ms)).count() >= self.max {
            return Issued::Full;
        }
        Issued::New(self.insert(pending))
    }

    /// A new code for `pending`'s person, voiding their earlier ones, which
    /// are named too.
    pub fn reissue(&mut self, pending: P) -> (Code, Vec<Code>) {
        let voided: Vec<Code> = self
            .issued
            .iter()
            .filter(|(_, p)| p.same_person(&pending))
            .map(|(code, _)| code.clone())
            .collect();
        for code in &voided {
            self.issued.remove(code);
        }
        (self.insert(pending), voided)
    }

    fn insert(&mut self, pending: P) -> Code {
        let code = loop {
            let code = Code::generate();
            if !self.issued.contains_key(&code) {
                break code;
            }
        };
        self.issued.insert(code.clone(), pending);
        code
    }

    /// Uses up `code`: who it was issued to, if it is live.
    pub fn take(&mut self, code: &Code, now_ms: u64) -> Option<P> {
        let pending = self.issued.remove(code)?;
        self.live(&pending, now_ms).then_some(pending)
    }

    /// Gives back `code`, taken for a pairing that could not be kept.
    pub fn put_back(&mut self, code: Code, pending: P) {
        self.issued.insert(code, pending);
    }

    /// Forgets the codes `which` picks, and names them.
    pub fn remove_where(&mut self, which: impl Fn(&Code, &P) -> bool) -> Vec<(Code, P)> {
        let picked: Vec<Code> = (self.issued.iter())
            .filter(|(code, p)| which(code, p))
            .map(|(code, _)| code.clone())
            .collect();
        picked
            .into_iter()
            .filter_map(|code| self.issued.remove(&code).map(|p| (code, p)))
            .collect()
    }

    /// The people waiting, oldest first.
    pub fn waiting(&self, now_ms: u64) -> Vec<P> {
        let mut waiting: Vec<P> = self.issued.values().filter(|p| self.live(p, now_ms)).cloned().collect();
        waiting.sort_by_key(|p| p.issued_ms());
        waiting
    }

    /// Forgets the codes expired at `now_ms`, and names them.
    pub fn sweep(&mut self, now_ms: u64) -> Vec<Code> {
        let expired: Vec<Code> = self
            .issued
            .iter()
            .filter(|(_, p)| !self.live(p, now_ms))
            .map(|(code, _)| code.clone())
            .collect();
        for code in &expired {
            self.issued.remove(code);
        }
        expired
    }

    fn live(&self, pending: &P, now_ms: u64) -> bool {
        now_ms.saturating_sub(pending.issued_ms()) < self.expire_ms
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};

    use super::*;

    const HOUR: u64 = 3_600_000;

    fn new_code(issued: Issued) -> Code {
        match issued {
            Issued::New(code) => code,
            other => panic!("no new code: {other:?}"),
        }
    }

    fn from(user: &str, at: u64) -> Pending {
        Pending {
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new(user).unwrap()),
            user: UserId::new(user).unwrap(),
            issued_ms: at,
            names: Default::default(),
        }
    }

    #[test]
    fn one_live_code_per_person() {
        let mut codes = Codes::new(HOUR, 10, []);
        let first = new_code(codes.issue(from("42", 0)));
        assert_eq!(
            codes.issue(from("42", 1_000)),
            Issued::Live,
            "not a second while the first lives"
        );
        new_code(codes.issue(from("43", 1_000)));
        assert_eq!(
            codes.take(&first, 2_000).map(|p| p.user.as_str().to_owned()),
            Some("42".into())
        );
        assert_eq!(codes.take(&first, 2_000), None, "used once");
    }

    #[test]
    fn a_code_expires_and_then_a_new_one_is_issued() {
        let mut codes = Codes::new(HOUR, 10, []);
        let first = new_code(codes.issue(from("42", 0)));
        assert_eq!(codes.waiting(HOUR - 1).len(), 1);
        assert!(codes.waiting(HOUR).is_empty());
        let second = new_code(codes.issue(from("42", HOUR)));
        assert_ne!(first, second);
        assert_eq!(
            codes.sweep(HOUR),
            std::slice::from_ref(&first),
            "the expired one is named"
        );
        assert_eq!(codes.take(&first, HOUR), None, "expired");
        assert!(codes.take(&second, HOUR).is_some());
    }

    #[test]
    fn an_expired_code_cannot_be_taken_even_before_a_sweep() {
        let mut codes = Codes::new(HOUR, 10, []);
        let first = new_code(codes.issue(from("42", 0)));
        assert_eq!(codes.take(&first, HOUR), None);
    }

    #[test]
    fn codes_kept_from_before_are_live_until_they_expire() {
        let kept = Code::parse("ABCDEFGH").unwrap();
        let mut codes = Codes::new(HOUR, 10, [(kept.clone(), from("42", 0))]);
        assert_eq!(codes.issue(from("42", 1_000)), Issued::Live, "they have a live code");
        assert_eq!(codes.waiting(1_000).len(), 1);
        assert!(codes.take(&kept, 2_000).is_some());
    }

    #[test]
    fn a_reissued_code_voids_the_persons_earlier_ones_only() {
        let mut codes = Codes::new(HOUR, 10, []);
        let first = new_code(codes.issue(from("42", 0)));
        let theirs = new_code(codes.issue(from("43", 0)));
        let (second, voided) = codes.reissue(from("42", 1_000));
        assert_eq!(voided, std::slice::from_ref(&first));
        assert_eq!(codes.take(&first, 2_000), None, "voided");
        assert!(codes.take(&second, 2_000).is_some());
        assert!(codes.take(&theirs, 2_000).is_some(), "another person's stays");
    }

    #[test]
    fn a_code_never_issued_is_unknown() {
        let mut codes = Codes::new(HOUR, 10, []);
        new_code(codes.issue(from("42", 0)));
        assert_eq!(codes.take(&Code::parse("ABCDEFGH").unwrap(), 1), None);
    }

    #[test]
    fn no_more_codes_wait_than_may_until_one_expires() {
        let mut codes = Codes::new(HOUR, 2, []);
        new_code(codes.issue(from("42", 0)));
        new_code(codes.issue(from("43", 1_000)));
        assert_eq!(codes.issue(from("44", 2_000)), Issued::Full);
        assert_eq!(codes.issue(from("42", 2_000)), Issued::Live, "one of them asking again");
        new_code(codes.issue(from("44", HOUR)));
    }
}
