//! Linked people on the admin path: `passepartout people` (everyone linked
//! across channels, with their accounts), `people unlink NUMBER|GATEWAY:USER`,
//! and `passepartout link [CODE]`, which links the terminal's own account as
//! `/link` does in a chat. A change is made durable before it is reported,
//! and the sides told in their outboxes are woken then.

use passepartout_admin::AccessAnswer;
use passepartout_gateway::{ConversationKey, UserId};

use super::AdminContext;
use crate::linking::{LinkError, Linking};
use crate::people::named;
use crate::store::{Identity, Linked, LinkedPerson, Names, Person};

/// `passepartout people`.
pub(super) fn listing(linking: &Linking) -> AccessAnswer {
    match linking.people() {
        Ok(people) if people.is_empty() => {
            done("Nobody is linked. Send /link in a private chat with the assistant to link two channels.".into())
        }
        Ok(people) => done(people.iter().map(person_lines).collect::<Vec<_>>().join("\n")),
        Err(error) => refused(format!("cannot read the people linked: {error}")),
    }
}

fn person_lines(person: &LinkedPerson) -> String {
    let mut lines = format!("person {}:\n", person.id);
    for identity in &person.identities {
        lines.push_str(&format!(
            "  {}  (chat {})\n",
            named(&identity.gateway, &identity.user, &identity.names),
            identity.conversation
        ));
    }
    lines
}

/// `passepartout link [CODE]` from the terminal's `by`, asking in `conversation`.
pub(super) async fn link(
    admin: &AdminContext,
    linking: &Linking,
    code: Option<String>,
    conversation: ConversationKey,
    by: UserId,
) -> AccessAnswer {
    let identity = Identity {
        gateway: conversation.gateway.clone(),
        user: by.clone(),
        aliases: Vec::new(),
        conversation,
        at_ms: admin.clock.now_ms(),
        names: Names::default(),
    };
    let Some(code) = code else {
        return match linking.ask(identity) {
            Ok(code) => done(crate::linking::code_text(code.as_str())),
            Err(error) => refused_because(error),
        };
    };
    let person = Person::known_as(identity.gateway.clone(), by);
    match linking.name(&code, &identity, &person) {
        Ok((Linked::Now(_), asked)) => match linking.durable().await {
            Ok(()) => {
                for told in [&asked.conversation, &identity.conversation] {
                    (admin.nudge)(told);
                }
                done(format!(
                    "Linked: this terminal and {} are one person now.",
                    named(&asked.gateway, &asked.user, &asked.names)
                ))
            }
            Err(error) => refused(format!("the link could not be made durable: {error}")),
        },
        Ok((Linked::Already(_), asked)) => done(format!(
            "This terminal and {} are one person already.",
            named(&asked.gateway, &asked.user, &asked.names)
        )),
        Err(error) => refused_because(error),
    }
}

/// `passepartout people unlink WHO`.
pub(super) async fn unlink(
    admin: &AdminContext,
    linking: &Linking,
    who: &str,
    conversation: ConversationKey,
    by: UserId,
) -> AccessAnswer {
    let person = Person::known_as(conversation.gateway.clone(), by);
    match linking.unlink_named(who, &person, &conversation) {
        Ok(was) => match linking.durable().await {
            Ok(()) => {
                for identity in &was.identities {
                    (admin.nudge)(&identity.conversation);
                }
                done(format!("{} is unlinked; every side was told.", who.trim()))
            }
            Err(error) => refused(format!("the change could not be made durable: {error}")),
        },
        Err(error) => refused_because(error),
    }
}

fn done(message: String) -> AccessAnswer {
    AccessAnswer { ok: true, message }
}

fn refused(message: String) -> AccessAnswer {
    AccessAnswer { ok: false, message }
}

fn refused_because(error: LinkError) -> AccessAnswer {
    refused(error.to_string())
}
