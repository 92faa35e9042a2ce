//! A conversation begun elsewhere: the earlier messages an API client sent
//! with the first message the daemon hears of it are kept as the
//! conversation's history, one record before that message's turn, so the
//! model reads them as what was said before and answers only the new
//! message. Only a conversation with no history yet is seeded: a turn run
//! again after a restart finds the seed kept and adds nothing twice. The
//! newest of them are kept, up to [`MAX_SEED_BYTES`] of text: a client
//! cannot fill the store, or every later context, with one request.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, EarlierRole, Inbound};

use super::Conversations;
use super::history::{RecentHistory, Remembered};
use crate::engine::pipeline::TurnRecord;
use crate::model::llm::ChatMessage;
use crate::store::TurnCommit;

/// The most text of a client's earlier messages kept, in bytes.
pub const MAX_SEED_BYTES: usize = 256 * 1024;

/// Keeps `inbound`'s earlier messages as `key`'s history, when it carries
/// some and the conversation has none yet. A failure is logged: the turn
/// then runs without them.
pub(super) async fn seed(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    inbound: &Inbound,
) {
    let Some(record) = record_of(inbound, cx.clock.now_ms()) else {
        return;
    };
    if cx.store.history_len(key) > 0 {
        return;
    }
    let kept = cx.store.history_id().and_then(|id| {
        let bytes = serde_json::to_vec(&record).map_err(|error| crate::store::StoreError::Corrupt {
            tree: "history",
            reason: error.to_string(),
        })?;
        Ok((id, bytes))
    });
    let (id, bytes) = match kept {
        Ok(kept) => kept,
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot keep a client's earlier messages");
            return;
        }
    };
    let commit = TurnCommit {
        history_record: Some(bytes),
        history_id: Some(id),
        ..TurnCommit::default()
    };
    match cx.store.commit_turn_durably(key, commit).await {
        Ok(_) => recent.committed(Remembered {
            record: Some((id, record)),
            ..Remembered::default()
        }),
        Err(error) => {
            recent.invalidate();
            tracing::error!(conversation = %key, %error, "cannot keep a client's earlier messages");
        }
    }
}

/// The history record of `inbound`'s earlier messages, dated `now_ms`.
fn record_of(inbound: &Inbound, now_ms: u64) -> Option<TurnRecord> {
    let earlier = &inbound.client.as_ref()?.earlier;
    if earlier.is_empty() {
        return None;
    }
    // The newest that fit, in their order.
    let mut room = MAX_SEED_BYTES;
    let newest = earlier
        .iter()
        .rev()
        .take_while(|message| match room.checked_sub(message.text.len()) {
            Some(left) => {
                room = left;
                true
            }
            None => false,
        })
        .count();
    if newest == 0 {
        return None;
    }
    let messages = earlier[earlier.len() - newest..]
        .iter()
        .map(|message| match message.role {
            EarlierRole::User => ChatMessage::user(message.text.clone()),
            EarlierRole::Assistant => ChatMessage::assistant(message.text.clone()),
        })
        .collect();
    Some(TurnRecord {
        messages,
        at_ms: Some(now_ms),
        by: Some(inbound.sender.id.clone()),
    })
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{
        ChatId, ClientContext, EarlierMessage, GatewayId, InboundBody, MessageId, Sender, UserId,
    };

    use super::*;
    use crate::model::llm::Role;

    fn inbound(client: Option<ClientContext>) -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new("web").unwrap(), ChatId::new("key-a/~1").unwrap()),
            sender: Sender::new(UserId::new("key-a").unwrap()),
            message_id: MessageId::new("m1").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: "now".into() },
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client,
        }
    }

    #[test]
    fn earlier_messages_become_one_record_in_their_order_and_nothing_else_does() {
        let earlier = vec![
            EarlierMessage {
                role: EarlierRole::User,
                text: "first".into(),
            },
            EarlierMessage {
                role: EarlierRole::Assistant,
                text: "an answer".into(),
            },
        ];
        let client = ClientContext {
            instructions: Some("be brief".into()),
            earlier,
        };
        let record = record_of(&inbound(Some(client)), 7).unwrap();
        let roles: Vec<Role> = record.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
        assert_eq!(record.messages[1].content, "an answer");
        assert_eq!(record.at_ms, Some(7));
        assert!(record_of(&inbound(None), 7).is_none());
        let only_instructions = ClientContext {
            instructions: Some("x".into()),
            earlier: Vec::new(),
        };
        assert!(record_of(&inbound(Some(only_instructions)), 7).is_none());
    }

    #[test]
    fn only_the_newest_earlier_messages_that_fit_are_kept() {
        let big = "x".repeat(MAX_SEED_BYTES / 3);
        let earlier = (0..5)
            .map(|n| EarlierMessage {
                role: if n % 2 == 0 {
                    EarlierRole::User
                } else {
                    EarlierRole::Assistant
                },
                text: format!("{n}{big}"),
            })
            .collect();
        let client = ClientContext {
            instructions: None,
            earlier,
        };
        let record = record_of(&inbound(Some(client)), 7).unwrap();
        assert_eq!(record.messages.len(), 2, "the two newest fit, a third would not");
        assert!(record.messages[0].content.starts_with('3') && record.messages[1].content.starts_with('4'));
        let kept: usize = record.messages.iter().map(|m| m.content.len()).sum();
        assert!(kept <= MAX_SEED_BYTES);
    }
}
