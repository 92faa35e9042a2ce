//! `chat` connecting again when the daemon goes away in the middle of a
//! session (a restart, an upgrade): it says so, tries again for a while,
//! and goes on in the same conversation with the same line history. Each
//! try is a fresh [`Client::connect`], which reads the key the restarted
//! daemon wrote beside its socket.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ClientError};

/// How long a chat waits for the daemon to come back before it gives up.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// The first wait between tries; each wait doubles, up to [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(100);
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// Said when the connection is lost and tried again.
pub const LOST: &str = "(the daemon closed the connection; connecting again…)";
/// Said once connected again.
pub const BACK: &str = "(connected again; the conversation goes on)";

/// Whether `error` is the daemon going away (worth connecting again),
/// rather than something connecting again would not change.
pub fn is_gone(error: &ClientError) -> bool {
    matches!(error, ClientError::Closed | ClientError::Io(_))
}

/// A new client for `chat` at `socket`, tried until the daemon answers or
/// [`GIVE_UP_AFTER`] passes; the last error then.
pub async fn connect_again(socket: &Path, chat: &ChatId) -> Result<Client, ClientError> {
    retry(|| Client::connect(socket, Some(chat.clone())), GIVE_UP_AFTER).await
}

/// `attempt` until it succeeds or `give_up` has passed since the first
/// try, waiting longer between tries; the last error when it gives up.
async fn retry<T, E, F, Fut>(mut attempt: F, give_up: Duration) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + give_up;
    let mut wait = FIRST_WAIT;
    loop {
        match attempt().await {
            Ok(done) => return Ok(done),
            Err(error) if tokio::time::Instant::now() + wait > deadline => return Err(error),
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(LONGEST_WAIT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn it_tries_again_until_the_daemon_is_back() {
        let tries = Cell::new(0);
        let started = tokio::time::Instant::now();
        let got = retry(
            || {
                tries.set(tries.get() + 1);
                let back = tries.get() == 5;
                async move { if back { Ok("client") } else { Err("not yet") } }
            },
            GIVE_UP_AFTER,
        )
        .await;
        assert_eq!(got, Ok("client"));
        assert_eq!(tries.get(), 5);
        // 100 + 200 + 400 + 800 ms of waiting.
        assert_eq!(started.elapsed(), Duration::from_millis(1500));
    }

    #[tokio::test(start_paused = true)]
    async fn it_gives_up_with_the_last_error_once_the_time_is_out() {
        let tries = Cell::new(0);
        let started = tokio::time::Instant::now();
        let got: Result<(), String> = retry(
            || {
                tries.set(tries.get() + 1);
                let n = tries.get();
                async move { Err(format!("try {n}")) }
            },
            GIVE_UP_AFTER,
        )
        .await;
        let last = format!("try {}", tries.get());
        assert_eq!(got, Err(last));
        assert!(started.elapsed() <= GIVE_UP_AFTER, "{:?}", started.elapsed());
        assert!(
            started.elapsed() >= GIVE_UP_AFTER - LONGEST_WAIT,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn only_the_daemon_going_away_is_worth_connecting_again() {
        assert!(is_gone(&ClientError::Closed));
        assert!(is_gone(&ClientError::Io(std::io::ErrorKind::BrokenPipe.into())));
        assert!(!is_gone(&ClientError::Protocol("bad frame".into())));
    }

    #[tokio::test]
    async fn with_nothing_listening_the_last_error_says_the_daemon_is_not_running() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("passepartout.sock");
        let got = retry(|| Client::connect(&socket, None), Duration::ZERO).await;
        let Err(error) = got else {
            panic!("nothing listens, yet it connected")
        };
        assert!(matches!(error, ClientError::NotRunning { .. }), "{error}");
    }
}
