//! What `passepartout pair list` and `passepartout access` show: the people
//! waiting for an owner (never their codes), and everyone let in per gateway
//! with where that comes from — the configuration, or a pairing.

use std::fmt::Write as _;

use passepartout_gateway::{ConversationKey, UserId};

use super::Pairing;
use crate::people::access::Roster;
use crate::people::named;
use crate::store::{Names, StoreError};

/// Someone waiting for an owner to approve their code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub conversation: ConversationKey,
    pub user: UserId,
    /// What they are called.
    pub names: Names,
    pub age_s: u64,
}

impl Pairing {
    /// The people with a live code, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        let now_ms = self.clock.now_ms();
        let codes = self.codes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        codes
            .waiting(now_ms)
            .into_iter()
            .map(|pending| Waiting {
                age_s: now_ms.saturating_sub(pending.issued_ms) / 1000,
                conversation: pending.conversation,
                user: pending.user,
                names: pending.names,
            })
            .collect()
    }

    /// `pair list`, for people.
    pub fn render_waiting(&self) -> String {
        let waiting = self.waiting();
        if waiting.is_empty() {
            return "no pairing codes waiting\n".into();
        }
        let mut out = String::new();
        for w in waiting {
            let _ = writeln!(
                out,
                "{}  in {}  {} ago",
                named(&w.conversation.gateway, &w.user, &w.names),
                w.conversation,
                age(w.age_s)
            );
        }
        out
    }

    /// `access`, for people: one line per entry, `gateway:who  what  source`.
    pub fn render_access(&self) -> Result<String, StoreError> {
        let mut out = String::new();
        for lists in self.lists.load().iter() {
            let gateway = &lists.gateway;
            match &lists.talkers {
                Roster::Everyone => {
                    let _ = writeln!(
                        out,
                        "{gateway}:*  allowed, approver  config (the gateway vouches for its peers)"
                    );
                }
                Roster::Listed { users, chats } => {
                    let approves = |user: &String| match &lists.deciders {
                        Roster::Everyone => true,
                        Roster::Listed { users, .. } => users.contains(user),
                    };
                    for user in users {
                        let what = if approves(user) { "allowed, approver" } else { "allowed" };
                        let _ = writeln!(out, "{gateway}:{user}  {what}  config");
                    }
                    for chat in chats {
                        let _ = writeln!(out, "{gateway} chat {chat}  allowed (everyone in it)  config");
                    }
                    if let Roster::Listed { users: deciders, .. } = &lists.deciders {
                        for user in deciders.iter().filter(|u| !users.contains(u)) {
                            let _ = writeln!(out, "{gateway}:{user}  approver  config");
                        }
                    }
                }
            }
        }
        for (gateway, user) in self.global.load().iter() {
            let _ = writeln!(out, "{gateway}:{user}  approver anywhere  config");
        }
        for person in self.store.paired()? {
            let what = if person.approver {
                "allowed, approver"
            } else {
                "allowed"
            };
            let _ = writeln!(
                out,
                "{}  {what}  paired by {}",
                named(&person.gateway, &person.user, &person.names),
                crate::people::shown(&person.by)
            );
        }
        if out.is_empty() {
            out.push_str("nobody is allowed on any gateway\n");
        }
        Ok(out)
    }
}

/// `s` seconds as a person reads them.
fn age(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}
