//! The socket's life: its file and mode, stale and live sockets, the client's
//! view of a missing daemon, and shutdown.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{Daemon, chat, text_outbound, unserved_admin, within};
use passepartout_gateway::{Deliver, HealthState, Listen};
use passepartout_socket::{Client, ClientError, ErrorCode, SocketConfig, SocketError, SocketGateway};

#[tokio::test]
async fn the_socket_file_is_private() {
    let (daemon, _core) = Daemon::start().await;
    let mode = std::fs::symlink_metadata(&daemon.path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists(), "the dead listener left its file");
    let gateway = SocketGateway::bind(SocketConfig::new(&path), unserved_admin())
        .await
        .expect("stale file replaced");
    // The new file answers.
    tokio::net::UnixStream::connect(&path).await.unwrap();
    drop(gateway);
}

#[tokio::test]
async fn a_live_socket_gives_in_use_and_keeps_serving() {
    let (daemon, _core) = Daemon::start().await;
    let second = SocketGateway::bind(SocketConfig::new(&daemon.path), unserved_admin()).await;
    match second {
        Err(error @ SocketError::InUse { .. }) => {
            assert!(error.to_string().contains("another daemon is listening on"), "{error}");
        }
        other => panic!("expected InUse, got {other:?}"),
    }
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    within(client.ping()).await.unwrap();
}

#[tokio::test]
async fn connecting_without_a_daemon_says_it_is_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sock");
    match Client::connect(&missing, None).await {
        Err(error @ ClientError::NotRunning { .. }) => {
            assert!(error.to_string().contains("not running"), "{error}");
            assert!(error.to_string().contains("missing.sock"), "{error}");
        }
        other => panic!("expected NotRunning, got {other:?}"),
    }
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(matches!(
        Client::connect(&stale, None).await,
        Err(ClientError::NotRunning { .. })
    ));
}

#[tokio::test]
async fn after_shutdown_messages_are_refused_replies_still_go_out_and_close_removes_the_socket() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();

    daemon.shutdown.cancel();
    within(daemon.listening).await.unwrap().expect("listen ends cleanly");
    assert_eq!(daemon.gateway.health().state, HealthState::Degraded);

    let sent = within(client.send(Some("late".into()), "too late", None)).await;
    assert!(
        matches!(
            sent,
            Err(ClientError::Refused {
                code: ErrorCode::ShuttingDown,
                ..
            })
        ),
        "{sent:?}"
    );
    assert!(
        matches!(
            Client::connect(&daemon.path, None).await,
            Err(ClientError::NotRunning { .. })
        ),
        "no new clients while draining"
    );
    // A turn still finishing can answer.
    within(daemon.gateway.deliver(&text_outbound("out-1", "work", "last words")))
        .await
        .unwrap();

    within(daemon.gateway.close()).await;
    assert!(!daemon.path.exists(), "close removes the socket file");
    assert_eq!(daemon.gateway.health().state, HealthState::Down);
    assert!(matches!(
        within(client.next_event()).await,
        Ok(passepartout_socket::ServerFrame::Reply { .. })
    ));
    assert!(matches!(
        within(client.next_event()).await,
        Err(ClientError::Closed | ClientError::Io(_))
    ));
    let after = daemon.gateway.deliver(&text_outbound("out-2", "work", "x")).await;
    assert_eq!(after, Err(passepartout_gateway::GatewayError::Closed));
}

#[tokio::test]
async fn dropping_the_gateway_removes_its_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sock");
    let gateway = SocketGateway::bind(SocketConfig::new(&path), unserved_admin())
        .await
        .unwrap();
    assert!(path.exists());
    drop(gateway);
    assert!(!path.exists());
}

#[tokio::test]
async fn a_missing_directory_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run/user/passepartout.sock");
    let gateway = SocketGateway::bind(SocketConfig::new(&path), unserved_admin())
        .await
        .unwrap();
    assert_eq!(gateway.path(), path);
    let mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "mode {mode:o}");
}
