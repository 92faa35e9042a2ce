//! What linking says: the code, and the notices that tell each side of a
//! link or an unlink. The notices go through the outbox, written in the
//! transaction that makes them true, so each is sent once, and only when
//! what it tells happened.

use std::collections::BTreeSet;

use passepartout_gateway::{ConversationKey, OutboundBody, ReplyKind};

use super::EXPIRE_MS;
use crate::people::named;
use crate::store::{Identity, LinkedPerson};

/// A message for one conversation's outbox.
pub type Notice = (ConversationKey, OutboundBody);

fn notice(conversation: &ConversationKey, text: String) -> Notice {
    let body = OutboundBody::Text {
        text,
        kind: ReplyKind::Notice,
    };
    (conversation.clone(), body)
}

/// `identity` as people read it: name, `@username`, `gateway:user`.
pub fn shown(identity: &Identity) -> String {
    named(&identity.gateway, &identity.user, &identity.names)
}

/// What `/handoff`, `/continue` and `/here` answer someone who is not
/// linked, or not in the private chat they linked from.
pub fn not_linked() -> String {
    "This works between your linked private chats with me: send /link here, then /link CODE from your other \
     channel."
        .to_owned()
}

/// The answer to `/link` in a chat: the code and what to do with it.
pub fn code_text(code: &str) -> String {
    format!(
        "Your link code is `{code}`. It works once, for {minutes} minutes: send `/link {code}` from your other \
         channel, and the two are one person to me, with one memory. Do not give it to anyone: whoever sends it \
         is linked with you.",
        minutes = EXPIRE_MS / 60_000
    )
}

/// What whoever asked for a code is told when it was said where others
/// read it, and voided.
pub fn voided() -> &'static str {
    "Your link code was sent where others can read it (a group, or someone else's chat), so it is void now: \
     nobody can link with it. Send /link here for a new one, and send that one only in your private chat with me."
}

/// The same for `passepartout link` at the terminal, which prints it as it is.
pub fn terminal_code_text(code: &str) -> String {
    format!(
        "Your link code is {code}. It works once, for {minutes} minutes: send /link {code} from a chat with the \
         assistant, and the chat and this terminal are one person to it. Do not give it to anyone: whoever \
         sends it is linked with you.",
        minutes = EXPIRE_MS / 60_000
    )
}

/// What `to` is told once it and `other` are linked (each side is told).
pub fn linked(to: &Identity, other: &Identity) -> Notice {
    let text = format!(
        "Linked: this chat and {} are one person to me now. What you tell me on either, I remember on both. \
         If that is not you, send /unlink here.",
        shown(other)
    );
    notice(&to.conversation, text)
}

/// What each side of `person` is told when the identities labelled `gone`
/// are taken out.
pub fn unlinked_notices(person: &LinkedPerson, gone: &BTreeSet<String>) -> Vec<Notice> {
    let names = |identities: &mut dyn Iterator<Item = &Identity>| identities.map(shown).collect::<Vec<_>>().join(", ");
    person
        .identities
        .iter()
        .map(|identity| {
            let text = if gone.contains(&identity.label()) {
                let others = names(&mut person.identities.iter().filter(|other| *other != identity));
                format!("Unlinked: this chat is no longer one person with {others}. What you tell me here stays here.")
            } else {
                let taken = names(&mut person.identities.iter().filter(|other| gone.contains(&other.label())));
                format!("Unlinked: {taken} is no longer one person with this chat.")
            };
            notice(&identity.conversation, text)
        })
        .collect()
}
