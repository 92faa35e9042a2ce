//! Deciding a queue at once, for a person back at the terminal:
//! `passepartout approvals approve --all-from CONVERSATION` and
//! `passepartout approvals deny --all`. Each pending approval is decided on
//! its own, as the local user — its own transaction, its own audit event,
//! first answer wins — exactly as if its token had been given alone.
//! Approving is only ever for one named conversation: what waits
//! everywhere at once is denied, never approved, in one go.

use passepartout_admin::{Decision as Decided1, Decisions};
use passepartout_gateway::{ConversationKey, GatewayId, UserId};

use super::control::describe_won_or_first;
use super::record::{Decision, How, Person, Status};
use super::{Approvals, Owed};
use crate::store::StoreError;

impl Approvals {
    /// Approves (or denies) every pending approval of the conversation
    /// `from` names (`gateway:chat`) — or, denying, of every conversation
    /// when it names none — as the local user `by`. Returns what came of
    /// each, and the conversations owed an outcome.
    pub fn decide_all(
        &self,
        approve: bool,
        from: Option<&str>,
        by: UserId,
    ) -> Result<(Decisions, Vec<Owed>), StoreError> {
        let refused = |message: String| {
            Ok((
                Decisions {
                    ok: false,
                    message,
                    decisions: Vec::new(),
                },
                Vec::new(),
            ))
        };
        let from = match from.map(conversation_key) {
            None if approve => {
                return refused(
                    "approving needs a conversation (--all-from gateway:chat): what waits everywhere is only denied at once"
                        .into(),
                );
            }
            None => None,
            Some(Some(conversation)) => Some(conversation),
            Some(None) => {
                let shown: String = from.unwrap_or_default().chars().take(64).collect();
                return refused(format!(
                    "`{shown}` is not a conversation; name one as gateway:chat, as `passepartout approvals` lists them"
                ));
            }
        };
        let Some(gateway) = self.policy.load().local_gateway().cloned() else {
            return refused("no gateway has a local user to decide".into());
        };
        let person = Person::known_as(gateway, by);
        let waiting: Vec<_> = self
            .store
            .approvals()?
            .into_iter()
            .filter(|a| a.is_pending() && from.as_ref().is_none_or(|c| a.conversation == *c))
            .collect();
        let mut decisions = Vec::with_capacity(waiting.len());
        let mut owed = Vec::new();
        for approval in &waiting {
            let decision = Decision {
                outcome: if approve { Status::Approved } else { Status::Denied },
                by: Some(person.clone()),
                how: How::Cli,
                at_ms: self.clock.now_ms(),
                message: None,
            };
            let (decided, message, settle) = describe_won_or_first(self, self.decide(approval, decision)?);
            owed.extend(settle);
            decisions.push(Decided1 { decided, message });
        }
        let done = decisions.iter().filter(|d| d.decided).count();
        let verb = if approve { "approved" } else { "denied" };
        let place = from.map_or_else(|| "anywhere".to_owned(), |c| format!("in {c}"));
        let message = if waiting.is_empty() {
            format!("Nothing waits for approval {place}.")
        } else {
            format!("{verb} {done} of {} waiting {place}", waiting.len())
        };
        Ok((
            Decisions {
                ok: true,
                message,
                decisions,
            },
            owed,
        ))
    }
}

/// `gateway:chat` as a conversation, if it is one.
fn conversation_key(text: &str) -> Option<ConversationKey> {
    let (gateway, chat) = text.split_once(':')?;
    Some(ConversationKey::new(
        GatewayId::new(gateway).ok()?,
        passepartout_gateway::ChatId::new(chat).ok()?,
    ))
}
