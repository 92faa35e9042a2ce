//! Linked people on the admin path: `passepartout people` (everyone linked
//! across channels, with their accounts), `people unlink NUMBER|GATEWAY:USER`,
//! and `passepartout link [CODE]`, which links the terminal's own account as
//! `/link` does in a chat. A change is made durable before it is reported,
//! and the sides told in their outboxes are woken then.

use passepartout_admin::AccessAnswer;
use passepartout_gateway::ConversationKey;

use super::told::{done, durable, refused, refused_because};
use crate::daemon::admin::AdminContext;
use crate::people::linking::words::shown;
use crate::people::linking::{Linking, terminal_code_text};
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
        lines.push_str(&format!("  {}  (chat {})\n", shown(identity), identity.conversation));
    }
    lines
}

/// `passepartout link [CODE]` from the terminal's `by`, asking in `conversation`.
pub(super) async fn link(
    admin: &AdminContext,
    code: Option<String>,
    conversation: ConversationKey,
    by: &Person,
) -> AccessAnswer {
    let linking = &admin.linking;
    let identity = Identity {
        gateway: conversation.gateway.clone(),
        user: by.user.clone(),
        aliases: Vec::new(),
        conversation,
        at_ms: admin.clock.now_ms(),
        names: Names::default(),
    };
    let Some(code) = code else {
        return match linking.ask(identity) {
            Ok(code) => done(terminal_code_text(code.as_str())),
            Err(error) => refused_because(error),
        };
    };
    match linking.name(&code, &identity, by) {
        Ok((Linked::Now(_), asked)) => {
            let shown = shown(&asked);
            let answer = durable(admin, format!("Linked: this terminal and {shown} are one person now.")).await;
            if answer.ok {
                for told in [&asked.conversation, &identity.conversation] {
                    (admin.nudge)(told);
                }
            }
            answer
        }
        Ok((Linked::Already(_), asked)) => done(format!("This terminal and {} are one person already.", shown(&asked))),
        Err(error) => refused_because(error),
    }
}

/// `passepartout people unlink WHO`.
pub(super) async fn unlink(
    admin: &AdminContext,
    who: &str,
    conversation: ConversationKey,
    by: &Person,
) -> AccessAnswer {
    match admin.linking.unlink_named(who, by, &conversation) {
        Ok(was) => {
            let answer = durable(admin, format!("{} is unlinked; every side was told.", who.trim())).await;
            if answer.ok {
                for identity in &was.identities {
                    (admin.nudge)(&identity.conversation);
                }
            }
            answer
        }
        Err(error) => refused_because(error),
    }
}
