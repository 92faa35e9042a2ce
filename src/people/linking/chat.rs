//! The answers to `/link`, `/link CODE` and `/unlink` in a chat. What
//! failed is said at once; what was done is told on every side through the
//! outbox, once the store has it on disk.

use passepartout_gateway::{ConversationKey, Inbound, Outbound, OutboundBody, ReplyKind};

use super::{LinkCommand, Linking, words};
use crate::store::{Identity, Linked, Person};

/// What the intake does with a linking command. Its `Debug` leaves out
/// what is said, which may be a code.
pub struct Answer {
    /// Sent at once: a code, or why nothing was done.
    pub now: Option<Outbound>,
    /// Conversations whose outboxes tell of what was done, to deliver once durable.
    pub told: Vec<ConversationKey>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("now", &self.now.as_ref().map(|_| "…"))
            .field("told", &self.told)
            .finish()
    }
}

impl Linking {
    /// The answer to `command`, which `inbound` is.
    pub fn answer_command(&self, inbound: &Inbound, command: &LinkCommand) -> Answer {
        let said = |text: String| Answer {
            now: Some(notice(inbound, text)),
            told: Vec::new(),
        };
        let identity = match self.identity_of(inbound) {
            Ok(identity) => identity,
            Err(error) => {
                if let LinkCommand::Name(typed) = command {
                    // Everyone there read it: nobody may use it now (the
                    // intake voided it already, and told whoever asked).
                    self.void(typed);
                    return said(format!("Not done: {error}. That code is void now; ask for a new one."));
                }
                return said(format!("Not done: {error}."));
            }
        };
        let by = Person::of(inbound);
        match command {
            LinkCommand::Ask => match self.ask(identity) {
                Ok(code) => said(words::code_text(code.as_str())),
                Err(error) => said(format!("No link code: {error}.")),
            },
            LinkCommand::Name(typed) => match self.name(typed, &identity, &by) {
                Ok((Linked::Now(_), asked)) => Answer {
                    now: None,
                    told: vec![asked.conversation, identity.conversation],
                },
                Ok((Linked::Already(_), asked)) => said(already(&asked)),
                Err(error) => said(format!("Not linked: {error}.")),
            },
            LinkCommand::Unlink => match self.unlink_self(&identity.gateway, &identity.user, &by) {
                Ok(person) => Answer {
                    now: None,
                    told: person.identities.into_iter().map(|i| i.conversation).collect(),
                },
                Err(error) => said(format!("Not unlinked: {error}.")),
            },
        }
    }
}

impl Linking {
    /// Voids the code `inbound` names if it is said where others read it
    /// (a group, someone else's chat), whoever said it and whatever they may
    /// do there: what tells whoever asked for the code, in their own chat.
    /// `None` when `inbound` names no code, names it in private, or names
    /// none that lives.
    pub fn void_said_in_the_open(&self, inbound: &Inbound) -> Option<Outbound> {
        let Some(LinkCommand::Name(typed)) = super::command::parse(inbound) else {
            return None;
        };
        if self.identity_of(inbound).is_ok() {
            return None;
        }
        let asked = self.void(&typed)?;
        Some(Outbound {
            id: format!("linking-void-{}", inbound.message_id),
            conversation: asked.conversation,
            in_reply_to: None,
            body: OutboundBody::Text {
                text: words::voided().to_owned(),
                kind: ReplyKind::Notice,
            },
            drafts: Vec::new(),
            turn_end: None,
        })
    }
}

fn already(asked: &Identity) -> String {
    format!("This chat and {} are one person to me already.", words::shown(asked))
}

/// A notice of linking's own into `inbound`'s conversation, replying to it.
fn notice(inbound: &Inbound, text: String) -> Outbound {
    crate::foundation::notices::outside(inbound, "linking", Some(inbound.message_id.clone()), text)
}
