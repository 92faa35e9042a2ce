//! Delivery that follows a linked person: what comes unasked in one of
//! their private chats (a reminder, a loop's output, the outcome of work
//! they approved) goes to the chat they chose with `/here`, and when that
//! chat's gateway cannot deliver it (not running, unreachable, refusing the
//! bot, rate-limited past a bound, or failing again and again), to their
//! next private chat, saying once where it was meant to go.
//!
//! A reply is moved from one outbox to the other in one transaction, made
//! durable before the other gateway is tried, so it is never in two
//! outboxes: across a crash it is delivered from one place. A reply whose
//! gateway failed with a timeout may have arrived after all; that is why
//! such failures move it only after several attempts, while a refused
//! connection (nothing was sent) moves it at once.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{ConversationKey, GatewayError};

use super::Conversations;
use crate::people::linking::words::not_linked;
use crate::store::{Following, LinkedPerson, OutboxEntry};

/// Failed attempts after which a reply goes on to the next chat although
/// its gateway only reported a passing failure.
const PASSING_FAILURES: u32 = 3;

/// A rate limit longer than this sends the reply on rather than waiting.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// Where what comes unasked in `key` goes, when `key` is a linked person's
/// private chat.
pub(super) fn following(cx: &Conversations, key: &ConversationKey) -> Option<Following> {
    let person = cx.store.linked_in(key).unwrap_or_else(|error| {
        tracing::warn!(conversation = %key, %error, "cannot read whose chat this is; replies stay here");
        None
    })?;
    let to = person.delivery_order(key)[0].clone();
    Some(Following { person: person.id, to })
}

/// The answer to `/here` from `person`, in `key`, the private chat they
/// linked from.
pub(super) fn here(cx: &Conversations, key: &ConversationKey, person: &LinkedPerson) -> String {
    match cx.store.prefer(person.id, key) {
        Ok(Some(_)) => format!(
            "Reminders and background results come here now. When {} cannot deliver them, they go to your next \
             linked chat.",
            cx.channels().name(&key.gateway)
        ),
        Ok(None) => not_linked(),
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot store the preferred chat");
            format!("I could not store that: {error}")
        }
    }
}

/// Whether a reply that follows a person goes on to their next chat after
/// `error`, at its `attempts`th failure.
pub(super) fn gives_up(error: &GatewayError, attempts: u32) -> bool {
    match error {
        GatewayError::Unreachable { .. } | GatewayError::Unauthorized { .. } | GatewayError::NotConnected => true,
        GatewayError::RateLimited { retry_after } => *retry_after > LONGEST_WAIT,
        GatewayError::Transient { .. } => attempts + 1 >= PASSING_FAILURES,
        GatewayError::Rejected { .. } | GatewayError::TooLarge { .. } => true,
        GatewayError::Closed => false,
    }
}

/// Moves `entry`, which `key`'s gateway cannot deliver, to the next private
/// chat of the person it follows that has a gateway running and was not
/// tried, and starts its delivery there. False when there is none (or it
/// follows nobody, or was partly delivered): it stays.
pub(super) async fn go_on(cx: &Arc<Conversations>, key: &ConversationKey, entry: &OutboxEntry) -> bool {
    let Some(id) = entry.follows.filter(|_| entry.parts_sent == 0) else {
        return false;
    };
    let person = match cx.store.person(id) {
        Ok(Some(person)) => person,
        Ok(None) => return false,
        Err(error) => {
            tracing::warn!(conversation = %key, %error, "cannot read whom a reply follows");
            return false;
        }
    };
    let next = person.delivery_order(key).into_iter().find(|to| {
        to.gateway != key.gateway && !entry.tried.contains(&to.gateway) && cx.deliver_half(&to.gateway).is_some()
    });
    let Some(to) = next else {
        return false;
    };
    let moved = cx.store.move_outbox_entry(entry, to, &cx.channels().name(&key.gateway));
    if let Err(error) = moved {
        tracing::error!(conversation = %key, %error, "cannot move a reply to the next chat");
        return false;
    }
    if let Err(error) = cx.store.durable().await {
        // Delivered from where it is now once the store can say so.
        tracing::error!(conversation = %to, %error, "a moved reply is not durable");
        return true;
    }
    tracing::info!(from = %key, to = %to, id = %entry.outbound.id, "reply goes on to the person's next chat");
    cx.deliver_waiting(to);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_moves_at_once_a_passing_failure_only_when_it_lasts() {
        let reason = || "x".to_owned();
        assert!(gives_up(&GatewayError::Unreachable { reason: reason() }, 0));
        assert!(gives_up(&GatewayError::Rejected { reason: reason() }, 0));
        assert!(gives_up(&GatewayError::NotConnected, 0));
        assert!(!gives_up(&GatewayError::Transient { reason: reason() }, 0));
        assert!(gives_up(
            &GatewayError::Transient { reason: reason() },
            PASSING_FAILURES - 1
        ));
        let short = GatewayError::RateLimited {
            retry_after: Duration::from_secs(3),
        };
        assert!(!gives_up(&short, 0));
        let long = GatewayError::RateLimited {
            retry_after: Duration::from_secs(600),
        };
        assert!(gives_up(&long, 0));
        assert!(!gives_up(&GatewayError::Closed, 5));
    }
}
