//! A fake OpenAI-compatible speech-to-text server on `127.0.0.1:0`: `POST
//! /v1/audio/transcriptions` with a real multipart body (`file`, `model`,
//! `response_format`, `language`) and `GET /v1/models`, answered as OpenAI
//! and whisper servers do — `{"text"}` for `json`, with `language`, `duration` and `segments`
//! for `verbose_json`, an `{"error":{..}}` body with an error status. By
//! default the transcript is the uploaded file's bytes read as UTF-8, so a
//! test "records" a voice note by writing its words. Tests queue one-shot
//! [`Script`]s and inspect what was uploaded. Self-contained (tokio, axum
//! with `multipart`, serde_json), so any test, unit test or bench can
//! include it with `#[path]`. Use it with real (unpaused) tokio time.
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How the fake answers one upload.
#[derive(Clone, Debug, PartialEq)]
pub enum Script {
    /// This transcript; in `verbose_json`, one segment with this mean
    /// log-probability.
    Heard { text: String, avg_logprob: f64 },
    /// This HTTP status with an OpenAI-style error body.
    Status(u16),
    /// Never answer, until the client gives up.
    Hang,
}

/// One upload, as the server read it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Upload {
    pub model: Option<String>,
    pub response_format: Option<String>,
    pub language: Option<String>,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub file: Vec<u8>,
    pub authorization: Option<String>,
}

/// Handle to a running fake. Clones share the same server.
#[derive(Clone)]
pub struct FakeTranscriber {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    state: Mutex<Recorded>,
    arrived: Notify,
}

#[derive(Default)]
struct Recorded {
    queue: VecDeque<Script>,
    uploads: Vec<Upload>,
    /// The key every request must carry as `Bearer`, if any.
    key: Option<String>,
}

impl FakeTranscriber {
    /// Starts serving on `127.0.0.1:0` in a task of the current runtime.
    pub async fn start() -> FakeTranscriber {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("fake transcriber: bind");
        let addr = listener.local_addr().expect("fake transcriber: address");
        let shared = Arc::new(Shared {
            state: Mutex::new(Recorded::default()),
            arrived: Notify::new(),
        });
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .route("/v1/models", get(models))
            .with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeTranscriber { shared, addr }
    }

    /// A base URL where nothing listens: a transcriber that is down. Its
    /// port is bound for the whole run and never listening, so no other
    /// test is given it (as `closed.rs` does; this file is the library's
    /// tests' too, which have no `support`).
    pub async fn dead_url() -> String {
        static HELD: std::sync::OnceLock<(tokio::net::TcpSocket, std::net::SocketAddr)> = std::sync::OnceLock::new();
        let (_, address) = HELD.get_or_init(|| {
            let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
            socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind a port");
            let address = socket.local_addr().expect("its address");
            (socket, address)
        });
        format!("http://{address}/v1")
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requires `Authorization: Bearer <key>`: others get a 401.
    pub fn require_key(&self, key: &str) {
        self.lock().key = Some(key.to_owned());
    }

    /// Queues a one-shot script, answered before the default echo.
    pub fn push(&self, script: Script) {
        self.lock().queue.push_back(script);
    }

    /// Every upload received, in order.
    pub fn uploads(&self) -> Vec<Upload> {
        self.lock().uploads.clone()
    }

    /// Waits until at least `n` uploads arrived, and returns them.
    pub async fn wait_for_uploads(&self, n: usize, timeout: Duration) -> Vec<Upload> {
        let wait = async {
            loop {
                let arrived = self.shared.arrived.notified();
                let uploads = self.uploads();
                if uploads.len() >= n {
                    return uploads;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or_else(|_| panic!("fake transcriber: fewer than {n} uploads within {timeout:?}"))
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `headers` carry the key the fake requires, if it requires one.
fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(key) = &state.key else {
        return true;
    };
    let given = headers.get("authorization").and_then(|value| value.to_str().ok());
    given == Some(format!("Bearer {key}").as_str())
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers) {
        return error_body(401, "Incorrect API key provided");
    }
    axum::Json(json!({"object": "list", "data": [{"id": "whisper-1", "object": "model"}]})).into_response()
}

async fn transcribe(State(shared): State<Arc<Shared>>, headers: HeaderMap, mut form: Multipart) -> Response {
    if !authorized(&shared, &headers) {
        return error_body(401, "Incorrect API key provided");
    }
    let mut upload = Upload {
        authorization: headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        ..Upload::default()
    };
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(error) => return error_body(400, &format!("malformed multipart body: {error}")),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            upload.file_name = field.file_name().map(str::to_owned);
            upload.content_type = field.content_type().map(str::to_owned);
            match field.bytes().await {
                Ok(bytes) => upload.file = bytes.to_vec(),
                Err(error) => return error_body(400, &format!("unreadable file: {error}")),
            }
            continue;
        }
        let Ok(value) = field.text().await else {
            return error_body(400, "unreadable field");
        };
        match name.as_str() {
            "model" => upload.model = Some(value),
            "response_format" => upload.response_format = Some(value),
            "language" => upload.language = Some(value),
            _ => {}
        }
    }
    let script = {
        let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.uploads.push(upload.clone());
        state.queue.pop_front()
    };
    shared.arrived.notify_waiters();
    if upload.file.is_empty() || upload.model.as_deref().is_none_or(str::is_empty) {
        return error_body(400, "file and model are required");
    }
    let script = script.unwrap_or_else(|| Script::Heard {
        text: String::from_utf8_lossy(&upload.file).into_owned(),
        avg_logprob: -0.2,
    });
    match script {
        Script::Heard { text, avg_logprob } => {
            let body = match upload.response_format.as_deref() {
                Some("verbose_json") => json!({
                    "task": "transcribe",
                    "language": "english",
                    "duration": 2.0,
                    "text": text,
                    "segments": [{"id": 0, "start": 0.0, "end": 2.0, "text": text,
                                  "avg_logprob": avg_logprob, "no_speech_prob": 0.01}],
                }),
                _ => json!({ "text": text }),
            };
            axum::Json(body).into_response()
        }
        Script::Status(code) => error_body(code, "the fake was told to fail"),
        Script::Hang => std::future::pending().await,
    }
}

fn error_body(code: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(code).expect("an HTTP status");
    let body: Value = json!({"error": {"message": message, "type": "invalid_request_error"}});
    (status, axum::Json(body)).into_response()
}
