//! `/stop`: the running turn of each conversation can be stopped from the
//! intake, since a `/stop` queued behind the turn it means to stop would only
//! run after it.
//!
//! The worker registers a token for each turn it runs, with the journal
//! entry the turn answers; when a `/stop` for the conversation is journaled,
//! the intake has `Conversations::stop_turn` mark that entry stopped in the
//! store and cancel the token (so a crash before the stopped turn commits
//! does not run it again at the next start: the store's `stops`). A stopped
//! turn is dropped like one that timed out — its model call is abandoned and a
//! shell command's process group killed (the shell tool kills it on drop) —
//! and commits the person's message, the rounds of tool calls it had
//! finished (each call with its result, so the model later knows what was
//! done) and a line saying it was stopped there. The `/stop` message itself, answered next in the
//! conversation's order, says whether a turn was stopped and what was kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use passepartout_gateway::ConversationKey;
use tokio_util::sync::CancellationToken;

/// The running turns' tokens, and the conversations whose turn was stopped
/// and not yet told so.
#[derive(Default)]
pub struct RunningTurns {
    /// Each running turn's number, journal entry and token.
    tokens: Mutex<HashMap<ConversationKey, Registered>>,
    numbers: AtomicU64,
    /// Stopped turns not yet told, with what each kept: the tool calls it
    /// had finished beside the person's message, or nothing at all.
    stopped: Mutex<HashMap<ConversationKey, Option<usize>>>,
}

/// What is known of a running turn.
struct Registered {
    number: u64,
    seq: u64,
    token: CancellationToken,
}

/// A running turn's registration; dropping it unregisters the turn.
pub struct Running {
    turns: Arc<RunningTurns>,
    key: ConversationKey,
    number: u64,
    token: CancellationToken,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl RunningTurns {
    /// Registers the turn `key`'s worker starts now, answering journal
    /// entry `seq`.
    pub fn start(self: &Arc<Self>, key: &ConversationKey, seq: u64) -> Running {
        let token = CancellationToken::new();
        let number = self.numbers.fetch_add(1, Ordering::Relaxed);
        let registered = Registered {
            number,
            seq,
            token: token.clone(),
        };
        lock(&self.tokens).insert(key.clone(), registered);
        Running {
            turns: self.clone(),
            key: key.clone(),
            number,
            token,
        }
    }

    /// The journal entry `key`'s running turn answers, if one runs.
    pub fn running(&self, key: &ConversationKey) -> Option<u64> {
        lock(&self.tokens).get(key).map(|registered| registered.seq)
    }

    /// Stops `key`'s running turn, if it has one.
    pub fn stop(&self, key: &ConversationKey) {
        if let Some(registered) = lock(&self.tokens).get(key) {
            registered.token.cancel();
        }
    }

    /// Notes that a turn of `key` found stopped at the start (it was
    /// stopped, and the daemon went down before it committed) was ended
    /// without being run, so the `/stop` that stopped it says so.
    pub fn stopped_before_restart(&self, key: &ConversationKey) {
        lock(&self.stopped).insert(key.clone(), None);
    }

    /// Notes that `key`'s stopped turn kept the person's message and
    /// `calls` finished tool calls.
    pub fn kept(&self, key: &ConversationKey, calls: usize) {
        if let Some(kept) = lock(&self.stopped).get_mut(key) {
            *kept = Some(calls);
        }
    }

    /// Whether a turn of `key` was stopped since the last call, with the
    /// tool calls it kept beside the person's message (none: nothing kept).
    pub fn take_stopped(&self, key: &ConversationKey) -> Option<Option<usize>> {
        lock(&self.stopped).remove(key)
    }
}

impl Running {
    /// Runs `turn` until it ends or is stopped (`None`).
    pub async fn run<T>(&self, turn: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            output = turn => Some(output),
            _ = self.token.cancelled() => {
                lock(&self.turns.stopped).insert(self.key.clone(), None);
                None
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut tokens = lock(&self.turns.tokens);
        // Only this turn's own token: a later turn may have registered since.
        if tokens
            .get(&self.key)
            .is_some_and(|registered| registered.number == self.number)
        {
            tokens.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use passepartout_gateway::{ChatId, GatewayId};

    fn key() -> ConversationKey {
        ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap())
    }

    #[tokio::test]
    async fn a_stopped_turn_is_dropped_and_told_once() {
        let turns = Arc::new(RunningTurns::default());
        let running = turns.start(&key(), 3);
        assert_eq!(turns.running(&key()), Some(3));
        turns.stop(&key());
        assert_eq!(running.run(std::future::pending::<()>()).await, None);
        turns.kept(&key(), 2);
        assert_eq!(turns.take_stopped(&key()), Some(Some(2)));
        assert_eq!(turns.take_stopped(&key()), None, "told once");
        drop(running);
        assert_eq!(turns.running(&key()), None, "unregistered when it ends");
        turns.stop(&key());
        let next = turns.start(&key(), 4);
        assert_eq!(
            next.run(async { 7 }).await,
            Some(7),
            "a stop with nothing running stops nothing later"
        );
        turns.kept(&key(), 1);
        assert_eq!(turns.take_stopped(&key()), None, "a turn not stopped is not told");
    }
}
