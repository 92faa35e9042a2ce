//! Accepting and serving the dashboard's connections, HTTP/1 through
//! hyper. What every connection passes before a byte of it is read as
//! HTTP:
//!
//! - a place among those held ([`Connections`]): past the limits a
//!   half-sent connection is closed to make room, or the new one is;
//! - on a listener for this machine only, the peer's user
//!   ([`peer_uid`](crate::peer_uid)): a connection from a local user other
//!   than the daemon's own (or one `[web] local_users` names) is answered
//!   403 and closed, so a session cookie a browser sends along is of no use
//!   to them;
//!
//! and then a whole request head within [`HEADER_TIMEOUT`], for the first
//! request and each one after it on a kept-alive connection, so an idle or
//! half-sent connection is closed after that long.
//!
//! When the gateway stops, connections are told to finish what they are
//! answering and close; the accept loop ends at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::connections::{Connections, Place};
use crate::peer_uid;

/// How long a client has to send a whole request head, and how long a
/// kept-alive connection may wait idle for its next one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a refused connection is given to take its answer.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an accept error (as: too many open files) holds accepting.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// What a connection from another local user is told.
pub const OTHER_USER: &str = "This dashboard answers only the local user the passepartout daemon runs as; \
                              this connection comes from another user of this machine.\n";

/// The whole answer to a connection from another local user.
fn other_user_answer() -> String {
    format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{OTHER_USER}",
        OTHER_USER.len()
    )
}

/// Who may connect: on a listener for this machine only, the daemon's own
/// user and those the settings name alone.
#[derive(Clone, Debug)]
pub enum Admit {
    /// Any peer (a listener that serves beyond this machine).
    Anyone,
    /// A loopback peer only when it is one of these users.
    LocalUsers(Arc<[u32]>),
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then waits
/// for the connections to finish. Fails only when the listener has no
/// address to tell its connections' users by.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    admit: Admit,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let ours = listener.local_addr()?;
    let connections = Arc::new(Connections::default());
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "the dashboard cannot accept a connection");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let Some(place) = connections.admit(peer.ip()) else {
            tracing::debug!(client = %peer.ip(), "web connection refused: too many held");
            continue;
        };
        let connection = Connection {
            stream,
            peer,
            ours,
            place,
            router: router.clone(),
            admit: admit.clone(),
            shutdown: shutdown.clone(),
        };
        tracker.spawn(connection.run());
    }
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// One accepted connection and what it needs.
struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    ours: SocketAddr,
    place: Place,
    router: Router,
    admit: Admit,
    shutdown: CancellationToken,
}

impl Connection {
    async fn run(self) {
        let Connection {
            mut stream,
            peer,
            ours,
            place,
            router,
            admit,
            shutdown,
        } = self;
        if let Admit::LocalUsers(users) = admit
            && peer.ip().is_loopback()
        {
            let found = tokio::task::spawn_blocking(move || peer_uid::of_loopback_peer(peer, ours))
                .await
                .ok()
                .flatten();
            if !found.is_some_and(|uid| users.contains(&uid)) {
                tracing::warn!(peer_uid = ?found, "web connection from another local user refused");
                // Written, then what the client sent is read away until it
                // closes, so the answer is not lost to a reset.
                let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
                    stream.write_all(other_user_answer().as_bytes()).await?;
                    stream.shutdown().await?;
                    tokio::io::copy(&mut stream, &mut tokio::io::sink()).await
                })
                .await;
                return;
            }
        }
        // Each piece of a streamed answer is a small write: without
        // TCP_NODELAY it waits for the client's delayed ACK (~40 ms).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY on a web connection");
        }
        let answered = place.answered.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            answered.store(true, Ordering::Release);
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            served = conn.as_mut() => return finished(served),
            () = place.evict.cancelled() => return,
            () = shutdown.cancelled() => conn.as_mut().graceful_shutdown(),
        }
        finished(conn.await);
    }
}

fn finished(served: Result<(), hyper::Error>) {
    if let Err(error) = served {
        tracing::debug!(%error, "a web connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::connections::MAX_PER_CLIENT;

    /// Serves `router` on a free port of this machine, to anyone.
    async fn started(router: Router) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, router, Admit::Anyone, CancellationToken::new()));
        addr
    }

    /// Everything the server sends until it closes, which it must within
    /// a few header timeouts.
    async fn read_all(stream: &mut TcpStream) -> String {
        let mut bytes = Vec::new();
        let read = tokio::time::timeout(HEADER_TIMEOUT * 4, stream.read_to_end(&mut bytes)).await;
        assert!(read.is_ok(), "the server closed the connection");
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_head_not_sent_in_time_closes_the_connection() {
        let addr = started(Router::new().route("/", get(|| async { "hello" }))).await;
        let mut half_sent = TcpStream::connect(addr).await.unwrap();
        half_sent.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        let opened = tokio::time::Instant::now();
        read_all(&mut half_sent).await;
        assert!(opened.elapsed() >= HEADER_TIMEOUT, "{:?}", opened.elapsed());

        // Kept alive after an answer, an idle connection is closed too.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let answered = read_all(&mut idle).await;
        assert!(
            answered.starts_with("HTTP/1.1 200") && answered.ends_with("hello"),
            "{answered}"
        );
    }

    #[tokio::test]
    async fn past_the_limit_the_oldest_half_sent_connection_makes_room() {
        let addr = started(Router::new().route("/", get(|| async { "hello" }))).await;
        let mut held = Vec::new();
        for _ in 0..MAX_PER_CLIENT {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
            held.push(stream);
        }
        let mut newest = TcpStream::connect(addr).await.unwrap();
        newest
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let answered = read_all(&mut newest).await;
        assert!(answered.ends_with("hello"), "{answered}");
        // Well before its header timeout, the oldest was closed for it.
        let mut oldest = held.remove(0);
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(HEADER_TIMEOUT / 2, oldest.read(&mut byte)).await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "{closed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_waits_for_answers_not_for_half_sent_requests() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let router = Router::new().route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "done"
            }),
        );
        let served = tokio::spawn(serve(listener, router, Admit::Anyone, stop.clone()));
        let mut half_sent = TcpStream::connect(addr).await.unwrap();
        half_sent.write_all(b"GET /slow HTTP/1.1\r\n").await.unwrap();
        let mut asking = TcpStream::connect(addr).await.unwrap();
        asking
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        // The answer is under way once its first second has passed.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stopping = tokio::time::Instant::now();
        stop.cancel();
        served.await.unwrap().unwrap();
        assert!(stopping.elapsed() < HEADER_TIMEOUT, "{:?}", stopping.elapsed());
        assert!(read_all(&mut asking).await.ends_with("done"), "the answer was finished");
        read_all(&mut half_sent).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_answer_is_not_cut_by_the_header_timeout() {
        let ticks = futures_util::stream::unfold(0, |n| async move {
            if n == 6 {
                return None;
            }
            tokio::time::sleep(Duration::from_secs(10)).await;
            Some((Ok::<_, std::convert::Infallible>(format!("tick {n}\n")), n + 1))
        });
        let body = Arc::new(std::sync::Mutex::new(Some(ticks)));
        let router = Router::new().route(
            "/",
            get(move || {
                let ticks = body.lock().unwrap().take().unwrap();
                async move { Body::from_stream(ticks) }
            }),
        );
        let addr = started(router).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let answer = read_all(&mut stream).await;
        assert!(answer.contains("tick 5"), "a minute of answer, whole: {answer}");
    }
}
