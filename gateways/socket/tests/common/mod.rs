//! Shared test scaffolding: a daemon-side gateway in a temporary directory, a
//! scripted core on the other end of the intake and of the admin queue, and a
//! raw client that can send bytes no well-behaved client would.
#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use passepartout_admin::{Admin, AdminQueue, AdminReply};
use passepartout_gateway::{ChatId, ConversationKey, GatewayError, IntakeQueue, Outbound};
use passepartout_gateway_testing::{Listening, build};
#[allow(unused_imports)] // Not every test binary names them.
pub use passepartout_gateway_testing::{ScriptedCore, Seen, build::chat, within};
use passepartout_socket::{ErrorCode, LineReader, ReadLine, ServerFrame, SocketConfig, SocketGateway, SocketKey};
use serde_json::json;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The status document the fake core answers with.
pub fn fake_status() -> serde_json::Value {
    json!({"state": "running", "fake": true})
}

/// A socket gateway listening in its own temporary directory.
pub struct Daemon {
    pub dir: TempDir,
    pub path: PathBuf,
    pub gateway: Arc<SocketGateway>,
    pub shutdown: CancellationToken,
    pub listening: JoinHandle<Result<(), GatewayError>>,
    /// The core's end of the gateway's admin queue, until a core serves it;
    /// while it waits here, admin questions wait too.
    pub admin: Option<AdminQueue>,
}

/// An admin handle nobody serves: every question is answered closed.
pub fn unserved_admin() -> Admin {
    Admin::channel(1).0
}

impl Daemon {
    /// Binds a gateway (settings adjusted by `tweak`) and starts listening;
    /// the caller serves the returned intake queue.
    pub async fn start_with(tweak: impl FnOnce(&mut SocketConfig)) -> (Daemon, IntakeQueue) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("passepartout.sock");
        let mut config = SocketConfig::new(&path);
        tweak(&mut config);
        let (admin, admin_queue) = Admin::channel(64);
        let gateway = SocketGateway::bind(config, admin).await.expect("bind");
        let (listening, queue) = Listening::start(gateway, 64);
        let Listening {
            gateway,
            shutdown,
            task: listening,
        } = listening;
        (
            Daemon {
                dir,
                path,
                gateway,
                shutdown,
                listening,
                admin: Some(admin_queue),
            },
            queue,
        )
    }

    /// A gateway with default settings and a [`ScriptedCore`] behind it.
    pub async fn start() -> (Daemon, ScriptedCore) {
        Self::start_tweaked(|_| {}).await
    }

    pub async fn start_tweaked(tweak: impl FnOnce(&mut SocketConfig)) -> (Daemon, ScriptedCore) {
        let (mut daemon, queue) = Self::start_with(tweak).await;
        let admin = daemon.admin.take().expect("the admin queue is not served yet");
        (daemon, fake_core(queue, admin))
    }
}

/// A core that accepts every message once (a repeated id is a duplicate)
/// and answers every admin request with [`fake_status`], recorded as
/// `"status"`.
pub fn fake_core(queue: IntakeQueue, mut admin: AdminQueue) -> ScriptedCore {
    let core = ScriptedCore::spawn(queue);
    let record = core.recorder();
    tokio::spawn(async move {
        while let Some(asked) = admin.recv().await {
            let _ = asked.reply.send(AdminReply::Status(fake_status()));
            record.record("status");
        }
    });
    core
}

pub fn socket_conversation(name: &str) -> ConversationKey {
    build::conversation("socket", name)
}

pub fn text_outbound(id: &str, chat_name: &str, text: &str) -> Outbound {
    Outbound {
        drafts: Vec::new(),
        turn_end: None,
        id: id.into(),
        ..build::outbound(socket_conversation(chat_name), Some("m1"), build::answer(text))
    }
}

/// The chat a client gets without naming one.
pub fn default_chat() -> ChatId {
    chat(&format!("uid-{}", euid()))
}

/// Our effective uid: the daemon's, since the test runs the daemon.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A client speaking raw lines, for frames the real [`Client`] never sends.
///
/// [`Client`]: passepartout_socket::Client
pub struct Raw {
    lines: LineReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Raw {
    /// A connection admitted as the CLI's is: it said hello with the
    /// daemon's key, in the default chat, and the welcome was read.
    pub async fn connect(path: &Path) -> Raw {
        let mut raw = Raw::unadmitted(path).await;
        raw.send_json(json!({"type": "hello", "version": 1, "key": Raw::key(path)}))
            .await;
        assert!(matches!(raw.frame().await, ServerFrame::Welcome { .. }));
        raw
    }

    /// A connection that has said nothing yet.
    pub async fn unadmitted(path: &Path) -> Raw {
        let stream = within(UnixStream::connect(path)).await.expect("connect");
        let (read, writer) = stream.into_split();
        Raw {
            lines: LineReader::new(read, 1 << 24),
            writer,
        }
    }

    /// The daemon's key, as a hello carries it.
    pub fn key(path: &Path) -> String {
        SocketKey::read_for(path)
            .expect("the daemon wrote its key")
            .as_str()
            .to_owned()
    }

    /// Whether the daemon closed the connection (after what it sent).
    pub async fn closed(&mut self) -> bool {
        matches!(within(self.lines.next_line()).await, Ok(ReadLine::Eof) | Err(_))
    }

    /// Writes `bytes` and a newline.
    pub async fn send_line(&mut self, bytes: &[u8]) {
        let mut line = bytes.to_vec();
        line.push(b'\n');
        within(self.writer.write_all(&line)).await.expect("write");
    }

    pub async fn send_json(&mut self, frame: serde_json::Value) {
        self.send_line(frame.to_string().as_bytes()).await;
    }

    /// The next frame from the daemon.
    pub async fn frame(&mut self) -> ServerFrame {
        match within(self.lines.next_line()).await.expect("read") {
            ReadLine::Line(line) => serde_json::from_slice(&line).expect("a server frame"),
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// The next frame, which must be an error with `code`.
    pub async fn expect_error(&mut self, code: ErrorCode) -> ServerFrame {
        let frame = self.frame().await;
        assert!(
            matches!(frame, ServerFrame::Error { code: got, .. } if got == code),
            "expected {code}, got {frame:?}"
        );
        frame
    }

    /// Sends a ping and expects the pong: the connection is still usable.
    pub async fn assert_usable(&mut self) {
        self.send_json(json!({"type": "ping"})).await;
        assert_eq!(self.frame().await, ServerFrame::Pong {});
    }

    /// The daemon closed the connection.
    pub async fn expect_closed(&mut self) {
        match within(self.lines.next_line()).await {
            Ok(ReadLine::Eof) | Err(_) => {}
            Ok(other) => panic!("expected the connection to close, got {other:?}"),
        }
    }
}
