//! The codes waiting for an owner, in memory: one live code per person at
//! most, so someone who keeps writing is sent one code per expiry window,
//! not one per message. A code is used once; an expired one is as unknown as
//! a code never issued. A restart forgets them: the person writes again and
//! is sent a new one.

use std::collections::HashMap;

use passepartout_gateway::{ConversationKey, UserId};

use super::code::Code;

/// Who a code was issued to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Where they wrote from (its gateway is theirs).
    pub conversation: ConversationKey,
    pub user: UserId,
    pub issued_ms: u64,
}

/// The live codes.
#[derive(Debug)]
pub struct Codes {
    expire_ms: u64,
    live: HashMap<Code, Pending>,
}

impl Codes {
    pub fn new(expire_ms: u64) -> Self {
        Self {
            expire_ms,
            live: HashMap::new(),
        }
    }

    /// A new code for `pending`'s person, unless they have a live one.
    pub fn issue(&mut self, pending: Pending) -> Option<Code> {
        self.sweep(pending.issued_ms);
        let theirs = |p: &Pending| p.user == pending.user && p.conversation.gateway == pending.conversation.gateway;
        if self.live.values().any(theirs) {
            return None;
        }
        let code = loop {
            let code = Code::generate();
            if !self.live.contains_key(&code) {
                break code;
            }
        };
        self.live.insert(code.clone(), pending);
        Some(code)
    }

    /// Uses up `code`: who it was issued to, if it is live.
    pub fn take(&mut self, code: &Code, now_ms: u64) -> Option<Pending> {
        self.sweep(now_ms);
        self.live.remove(code)
    }

    /// The people waiting, oldest first.
    pub fn waiting(&mut self, now_ms: u64) -> Vec<Pending> {
        self.sweep(now_ms);
        let mut waiting: Vec<Pending> = self.live.values().cloned().collect();
        waiting.sort_by_key(|p| p.issued_ms);
        waiting
    }

    fn sweep(&mut self, now_ms: u64) {
        let expire_ms = self.expire_ms;
        self.live
            .retain(|_, pending| now_ms.saturating_sub(pending.issued_ms) < expire_ms);
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;

    const HOUR: u64 = 3_600_000;

    fn from(user: &str, at: u64) -> Pending {
        Pending {
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new(user).unwrap()),
            user: UserId::new(user).unwrap(),
            issued_ms: at,
        }
    }

    #[test]
    fn one_live_code_per_person() {
        let mut codes = Codes::new(HOUR);
        let first = codes.issue(from("42", 0)).expect("a first code");
        assert_eq!(
            codes.issue(from("42", 1_000)),
            None,
            "not a second while the first lives"
        );
        assert!(codes.issue(from("43", 1_000)).is_some(), "each person their own");
        assert_eq!(
            codes.take(&first, 2_000).map(|p| p.user.as_str().to_owned()),
            Some("42".into())
        );
        assert_eq!(codes.take(&first, 2_000), None, "used once");
    }

    #[test]
    fn a_code_expires_and_then_a_new_one_is_issued() {
        let mut codes = Codes::new(HOUR);
        let first = codes.issue(from("42", 0)).unwrap();
        assert_eq!(codes.waiting(HOUR - 1).len(), 1);
        assert_eq!(codes.take(&first, HOUR), None, "expired");
        let second = codes.issue(from("42", HOUR)).expect("a new code after the window");
        assert_ne!(first, second);
    }

    #[test]
    fn a_code_never_issued_is_unknown() {
        let mut codes = Codes::new(HOUR);
        codes.issue(from("42", 0)).unwrap();
        assert_eq!(codes.take(&Code::parse("ABCDEFGH").unwrap(), 1), None);
    }
}
