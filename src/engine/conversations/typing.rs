//! "Typing" in a conversation while a turn runs, for the turns a person
//! waits on: a message's and an approval's outcome.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::ConversationKey;

use super::Conversations;

/// How long a turn runs before the conversation shows "typing".
const TYPING_AFTER: Duration = Duration::from_millis(300);
/// How often the typing indicator is renewed while a turn runs.
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// Shows "typing" in the conversation while `turn` runs, once it has taken
/// longer than [`TYPING_AFTER`], renewed every [`TYPING_EVERY`] (platform
/// indicators fade after about five seconds). A quick answer needs none.
pub(super) async fn with_typing<T>(cx: &Arc<Conversations>, key: &ConversationKey, turn: impl Future<Output = T>) -> T {
    let Some(gateway) = cx.deliver_half(&key.gateway) else {
        return turn.await;
    };
    tokio::pin!(turn);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + TYPING_AFTER, TYPING_EVERY);
    loop {
        tokio::select! {
            output = &mut turn => return output,
            _ = ticker.tick() => {
                // Best effort, and never allowed to hold up the turn for long.
                match tokio::time::timeout(TYPING_EVERY / 2, gateway.typing(key)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(conversation = %key, %error, "typing indicator failed"),
                    Err(_) => tracing::debug!(conversation = %key, "typing indicator timed out"),
                }
            }
        }
    }
}
