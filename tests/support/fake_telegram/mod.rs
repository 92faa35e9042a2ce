//! A fake Telegram Bot API server on `127.0.0.1:0`, for testing the Telegram
//! gateway end to end. It speaks the real wire protocol (`/bot<TOKEN>/<method>`,
//! method names case-insensitive, JSON or form bodies, `{"ok":…}` envelopes), so
//! teloxide runs unmodified against it with `Bot::new(token).set_api_url(url)`.
//!
//! Tests queue updates (built by the `*_message` / [`FakeTelegram::callback_query`]
//! helpers, or any JSON), which `getUpdates` long-polls for with Telegram's
//! offset semantics; inspect what the bot sent and called; inject failures with
//! Telegram's error envelopes (now, after some successes, or as an answer
//! that never comes); take file uploads (`sendDocument`, `sendPhoto` as
//! multipart, see `uploads`); and shut it down to simulate Telegram going away.
//! Files registered with [`FakeTelegram::add_file`] are found by `getFile` and
//! downloaded from `/file/bot<TOKEN>/<file_path>`, whole, streamed, endless
//! (for a client that must stop reading on its own), or answered with an HTTP
//! error; `getFile` may declare a size other than the bytes served.
//! A message's `entities` are checked as Telegram checks them (see
//! `entities`), and refused with "Bad Request: can't parse entities".
//! Self-contained (tokio, axum, serde_json), so any test target can include it
//! with `#[path]`. Use it with real (unpaused) tokio time.
#![allow(dead_code)] // every including target uses a different part of it

mod entities;
mod methods;
mod uploads;

use super::fake_llm::{serve_until_shutdown, wait_on};
use methods::*;
pub use uploads::Uploaded;
use uploads::*;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::routing::{any, get};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

/// The first `update_id` handed out; not 0 or 1, so code assuming either fails.
const FIRST_UPDATE_ID: i64 = 700_000_001;
/// Telegram's limit on a message's text, in UTF-16 code units.
const MAX_TEXT_UTF16: usize = 4096;
/// Telegram's limit on `callback_data`, in bytes.
const MAX_CALLBACK_DATA: usize = 64;
const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

/// A failure to answer the next call of a method with, in Telegram's own words.
#[derive(Clone, Debug, PartialEq)]
pub enum FakeFailure {
    /// 409 "Conflict: terminated by other getUpdates request; …".
    Conflict,
    /// 429 "Too Many Requests: retry after N" with `parameters.retry_after`.
    RetryAfter(u64),
    /// 401 "Unauthorized" (a revoked token).
    Unauthorized,
    /// 500 "Internal Server Error". teloxide sleeps 10 s before reading any
    /// 5xx body (the gateway reads its own getUpdates answers at once).
    ServerError,
    /// 400 with this description, e.g. "Bad Request: chat not found".
    BadRequest(String),
    /// 502 with an HTML page, as a proxy in front of Telegram may answer:
    /// no JSON at all. Its text holds [`NOT_JSON_MARKER`].
    NotJson,
    /// No answer at all: the call waits until the client gives up or goes
    /// (a process killed in the middle of a send).
    Hang,
}

/// How the fake serves a file's download.
#[derive(Clone, Debug, PartialEq)]
pub enum Download {
    /// The bytes, with a `Content-Length`.
    Whole,
    /// The bytes in small chunks, with no `Content-Length` (chunked encoding).
    Streamed,
    /// Chunks without end and no `Content-Length`: only a client's own cap stops it.
    Endless,
    /// This HTTP status instead of the file (404: a `file_path` expired or gone).
    Status(u16),
}

/// A file the fake serves.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeFile {
    pub bytes: Vec<u8>,
    /// The `file_size` getFile declares; `None` leaves it out.
    pub declared_size: Option<u64>,
    pub download: Download,
    /// The download's `Content-Type`, if any.
    pub content_type: Option<String>,
}

impl FakeFile {
    /// `bytes`, declared truthfully, downloaded whole.
    pub fn new(bytes: impl Into<Vec<u8>>) -> FakeFile {
        let bytes = bytes.into();
        FakeFile {
            declared_size: Some(bytes.len() as u64),
            bytes,
            download: Download::Whole,
            content_type: None,
        }
    }
}

/// Where the fake keeps a file: `file_path` is this followed by the file id.
pub const FILE_PATH_PREFIX: &str = "documents/";

/// A word in the [`FakeFailure::NotJson`] page, to look for in logs.
pub const NOT_JSON_MARKER: &str = "proxy-page-content";

/// One successful `sendMessage`, as the bot asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The id the fake gave the new message.
    pub message_id: i64,
    pub chat_id: i64,
    pub text: String,
    /// From `reply_parameters.message_id`, or the legacy `reply_to_message_id`.
    pub reply_to_message_id: Option<i64>,
    pub reply_markup: Option<Value>,
    /// Every parameter, as received.
    pub params: Value,
}

/// Handle to a running fake server. Clones share the same server.
#[derive(Clone)]
pub struct FakeTelegram {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    token: String,
    state: Mutex<Recorded>,
    /// Woken whenever a call has been recorded.
    called: Notify,
    /// Woken whenever an update is queued or a newer getUpdates starts.
    queued: Notify,
    shutdown: watch::Sender<bool>,
}

struct Recorded {
    bot: Value,
    next_update_id: i64,
    next_message_id: i64,
    next_callback: u64,
    pending: VecDeque<Value>,
    /// The highest positive `offset` a getUpdates has confirmed.
    confirmed: i64,
    /// Bumped by every getUpdates; an older waiting poll then ends with 409.
    poll_generation: u64,
    /// getUpdates calls answered (a failure set for one aside).
    polls_answered: usize,
    webhook: Option<String>,
    /// Every message seen or sent, by (chat id, message id).
    messages: HashMap<(i64, i64), Value>,
    chats: HashMap<i64, Value>,
    open_callbacks: HashSet<String>,
    /// (lower-case method, params) of every call with the right token, in order.
    calls: Vec<(String, Value)>,
    /// When each of `calls` came.
    called_at: Vec<std::time::Instant>,
    sent: Vec<Sent>,
    failures: HashMap<String, VecDeque<FakeFailure>>,
    /// A failure for a method once it succeeded this many more times.
    failing_after: HashMap<String, (usize, FakeFailure)>,
    /// Every successful file upload, in order.
    uploads: Vec<Uploaded>,
    delays: HashMap<String, Duration>,
    /// Files getFile knows, by file id.
    files: HashMap<String, FakeFile>,
    /// The `file_path` of every download asked for with the right token, in order.
    downloads: Vec<String>,
}

/// A Bot API error: the HTTP status equals `error_code`, like Telegram's.
struct ApiError {
    code: u16,
    description: String,
    retry_after: Option<u64>,
}

impl ApiError {
    fn new(code: u16, description: impl Into<String>) -> Self {
        ApiError {
            code,
            description: description.into(),
            retry_after: None,
        }
    }

    fn bad_request(what: &str) -> Self {
        ApiError::new(400, format!("Bad Request: {what}"))
    }
}

impl From<FakeFailure> for ApiError {
    fn from(failure: FakeFailure) -> Self {
        match failure {
            FakeFailure::Conflict => ApiError::new(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            ),
            FakeFailure::RetryAfter(secs) => ApiError {
                retry_after: Some(secs),
                ..ApiError::new(429, format!("Too Many Requests: retry after {secs}"))
            },
            FakeFailure::Unauthorized => ApiError::new(401, "Unauthorized"),
            FakeFailure::ServerError => ApiError::new(500, "Internal Server Error"),
            FakeFailure::BadRequest(description) => ApiError::new(400, description),
            // Answered as a page, not an envelope (see `methods::handle`).
            FakeFailure::NotJson => ApiError::new(502, "Bad Gateway"),
            // Never answered (see `methods::handle`).
            FakeFailure::Hang => ApiError::new(504, "Gateway Timeout"),
        }
    }
}

impl std::fmt::Debug for FakeTelegram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeTelegram")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeTelegram {
    /// Start serving on `127.0.0.1:0`. The bot's user id is the token's numeric
    /// prefix (`"123:abc"` → 123), its username `fake_bot`.
    pub async fn start(token: &str) -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("fake Telegram: bind");
        let addr = listener.local_addr().expect("fake Telegram: read the bound address");
        let bot_id = token
            .split(':')
            .next()
            .and_then(|id| id.parse::<i64>().ok())
            .unwrap_or(4242);
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            state: Mutex::new(Recorded {
                bot: json!({"id": bot_id, "is_bot": true, "first_name": "Fake Bot", "username": "fake_bot"}),
                next_update_id: FIRST_UPDATE_ID,
                next_message_id: 1,
                next_callback: 1,
                pending: VecDeque::new(),
                confirmed: 0,
                poll_generation: 0,
                polls_answered: 0,
                webhook: None,
                messages: HashMap::new(),
                chats: HashMap::new(),
                open_callbacks: HashSet::new(),
                calls: Vec::new(),
                called_at: Vec::new(),
                sent: Vec::new(),
                failures: HashMap::new(),
                failing_after: HashMap::new(),
                uploads: Vec::new(),
                delays: HashMap::new(),
                files: HashMap::new(),
                downloads: Vec::new(),
            }),
            called: Notify::new(),
            queued: Notify::new(),
            shutdown,
        });
        let app = Router::new()
            .route("/{bot}/{method}", any(handle))
            .route("/file/{bot}/{*path}", get(download))
            .fallback(|| async { error_response(ApiError::new(404, "Not Found")) })
            .with_state(Arc::clone(&shared));
        serve_until_shutdown(listener, app, &shared.shutdown);
        FakeTelegram { shared, addr }
    }

    /// `http://127.0.0.1:PORT`, for `Bot::set_api_url` (no path: teloxide would
    /// add a double slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bot's `User` object, as `from` of the messages it sends.
    pub fn bot_user(&self) -> Value {
        self.lock().bot.clone()
    }

    /// Queue an update (`{"message": …}` and the like, e.g. from the helpers
    /// below); any `update_id` in it is replaced by the next increasing one,
    /// which is returned. A waiting getUpdates answers at once.
    pub fn push_update(&self, update: Value) -> i64 {
        let Value::Object(mut update) = update else {
            panic!("fake Telegram: an update must be a JSON object, got {update}");
        };
        let id = {
            let mut state = self.lock();
            let id = state.next_update_id;
            state.next_update_id += 1;
            update.insert("update_id".into(), json!(id));
            state.pending.push_back(Value::Object(update));
            id
        };
        self.shared.queued.notify_waiters();
        id
    }

    /// Queue an update given as raw text, answered verbatim inside the
    /// getUpdates result, e.g. JSON that is cut off, which no client can parse.
    /// Every `{ID}` in `text` becomes its `update_id`, which is returned.
    pub fn push_raw_update(&self, text: &str) -> i64 {
        let id = self.lock().next_update_id;
        let raw = text.replace("{ID}", &id.to_string());
        let pushed = self.push_update(json!({ RAW_TEXT: raw }));
        assert_eq!(pushed, id, "fake Telegram: updates were queued concurrently");
        id
    }

    /// A text message from `user_id` whose `entities` hold arrays nested
    /// `depth` deep: valid JSON, but past a parser's recursion limit when deep.
    pub fn nested_message(&self, chat_id: i64, user_id: i64, depth: usize) -> Value {
        let mut nested = json!(0);
        for _ in 0..depth {
            nested = json!([nested]);
        }
        json!({"message": self.incoming(chat_id, user_id, json!({"text": "deep", "entities": nested}))})
    }

    /// A text message from `user_id`; a private chat if `chat_id > 0`, else a
    /// group. Each `@name` in it gets a `mention` entity, as Telegram adds.
    pub fn text_message(&self, chat_id: i64, user_id: i64, text: &str) -> Value {
        let mut extra = json!({"text": text});
        let mentions = mention_entities(text);
        if !mentions.is_empty() {
            extra["entities"] = Value::Array(mentions);
        }
        json!({"message": self.incoming(chat_id, user_id, extra)})
    }

    /// `user_id`'s edit of their message `message_id` in `chat_id`, which
    /// now says `text` (an `edited_message` update).
    pub fn edited_message(&self, chat_id: i64, user_id: i64, message_id: i64, text: &str) -> Value {
        let mut edited = {
            let state = self.lock();
            state.messages.get(&(chat_id, message_id)).cloned()
        }
        .unwrap_or_else(|| panic!("fake Telegram: no message {message_id} in {chat_id} to edit"));
        assert_eq!(
            edited["from"]["id"], user_id,
            "fake Telegram: people edit their own messages"
        );
        edited["text"] = json!(text);
        edited["edit_date"] = json!(now() + 1);
        self.lock().messages.insert((chat_id, message_id), edited.clone());
        json!({ "edited_message": edited })
    }

    /// A text message in a group (`chat_id < -10¹²`: a supergroup).
    pub fn group_message(&self, chat_id: i64, user_id: i64, text: &str) -> Value {
        assert!(chat_id < 0, "fake Telegram: group chat ids are negative");
        self.text_message(chat_id, user_id, text)
    }

    /// A text message replying to message `to_message_id` of the same chat
    /// (the stored one if the fake has seen it, else a stand-in by the bot).
    pub fn reply_to(&self, chat_id: i64, user_id: i64, text: &str, to_message_id: i64) -> Value {
        let replied = {
            let state = self.lock();
            let mut replied = state
                .messages
                .get(&(chat_id, to_message_id))
                .cloned()
                .unwrap_or_else(|| stand_in(&state, chat_id, to_message_id));
            replied.as_object_mut().map(|m| m.remove("reply_to_message"));
            replied
        };
        json!({"message": self.incoming(chat_id, user_id, json!({"text": text, "reply_to_message": replied}))})
    }

    /// A photo (two sizes) with an optional caption.
    pub fn photo_message(&self, chat_id: i64, user_id: i64, caption: Option<&str>) -> Value {
        let size = |tag: &str, width: u32, height: u32, bytes: u32| {
            json!({"file_id": format!("AgACfake-{tag}-{chat_id}"), "file_unique_id": format!("AQADfake{tag}"),
                   "width": width, "height": height, "file_size": bytes})
        };
        let mut extra = json!({"photo": [size("s", 90, 67, 1_284), size("x", 1280, 960, 98_112)]});
        if let Some(caption) = caption {
            extra["caption"] = json!(caption);
        }
        json!({"message": self.incoming(chat_id, user_id, extra)})
    }

    /// A voice note whose file is `file_id`, declaring `bytes`, with an optional caption.
    pub fn voice_message(&self, chat_id: i64, user_id: i64, file_id: &str, bytes: u64, caption: Option<&str>) -> Value {
        let voice = json!({"file_id": file_id, "file_unique_id": format!("AgADv{file_id}"), "duration": 3,
                           "mime_type": "audio/ogg", "file_size": bytes});
        self.media_message(chat_id, user_id, json!({"voice": voice}), caption)
    }

    /// An audio file `name` whose file is `file_id`, declaring `bytes`.
    pub fn audio_message(&self, chat_id: i64, user_id: i64, file_id: &str, name: &str, bytes: u64) -> Value {
        let audio = json!({"file_id": file_id, "file_unique_id": format!("AgADa{file_id}"), "duration": 95,
                           "file_name": name, "mime_type": "audio/mpeg", "file_size": bytes});
        self.media_message(chat_id, user_id, json!({"audio": audio}), None)
    }

    /// A document `name` (its type from its extension) whose file is
    /// `file_id`, declaring `bytes`, with an optional caption.
    pub fn document_message(
        &self,
        chat_id: i64,
        user_id: i64,
        file_id: &str,
        name: &str,
        bytes: u64,
        caption: Option<&str>,
    ) -> Value {
        let mime = match name.rsplit_once('.').map(|(_, extension)| extension) {
            Some("txt") => "text/plain",
            Some("pdf") => "application/pdf",
            Some("png") => "image/png",
            _ => "application/octet-stream",
        };
        let document = json!({"file_id": file_id, "file_unique_id": format!("AgADd{file_id}"),
                              "file_name": name, "mime_type": mime, "file_size": bytes});
        self.media_message(chat_id, user_id, json!({"document": document}), caption)
    }

    /// A sticker showing `emoji`.
    pub fn sticker_message(&self, chat_id: i64, user_id: i64, emoji: &str) -> Value {
        let sticker = json!({"file_id": "CAACfake-sticker", "file_unique_id": "AgADsticker", "type": "regular",
                             "width": 512, "height": 512, "is_animated": false, "is_video": false,
                             "emoji": emoji, "set_name": "FakeStickers", "file_size": 23_000});
        json!({"message": self.incoming(chat_id, user_id, json!({"sticker": sticker}))})
    }

    /// A shared location.
    pub fn location_message(&self, chat_id: i64, user_id: i64, latitude: f64, longitude: f64) -> Value {
        let location = json!({"latitude": latitude, "longitude": longitude});
        json!({"message": self.incoming(chat_id, user_id, json!({"location": location}))})
    }

    /// A shared contact.
    pub fn contact_message(&self, chat_id: i64, user_id: i64, first_name: &str, phone: &str) -> Value {
        let contact = json!({"phone_number": phone, "first_name": first_name});
        json!({"message": self.incoming(chat_id, user_id, json!({"contact": contact}))})
    }

    fn media_message(&self, chat_id: i64, user_id: i64, mut extra: Value, caption: Option<&str>) -> Value {
        if let Some(caption) = caption {
            extra["caption"] = json!(caption);
        }
        json!({"message": self.incoming(chat_id, user_id, extra)})
    }

    /// Makes `file_id` known to getFile, with `file_path`
    /// [`FILE_PATH_PREFIX`]`<file_id>`, which is returned.
    pub fn add_file(&self, file_id: &str, file: FakeFile) -> String {
        self.lock().files.insert(file_id.to_owned(), file);
        format!("{FILE_PATH_PREFIX}{file_id}")
    }

    /// The `file_path` of every download asked for with the right token, in order.
    pub fn downloads(&self) -> Vec<String> {
        self.lock().downloads.clone()
    }

    /// A press by `user_id` of an inline button with `data` under message
    /// `message_id` (the stored one if known). Its id must be answered once.
    pub fn callback_query(&self, user_id: i64, chat_id: i64, message_id: i64, data: &str) -> Value {
        let mut state = self.lock();
        let id = format!("{}{:08}", user_id.unsigned_abs(), state.next_callback);
        state.next_callback += 1;
        state.open_callbacks.insert(id.clone());
        let message = state
            .messages
            .get(&(chat_id, message_id))
            .cloned()
            .unwrap_or_else(|| stand_in(&state, chat_id, message_id));
        json!({"callback_query": {
            "id": id, "from": user(user_id), "message": message,
            "chat_instance": format!("-{}", chat_id.unsigned_abs() + 9_000), "data": data,
        }})
    }

    /// A kind the gateway most likely ignores (teloxide knows polls).
    pub fn poll_update(&self) -> Value {
        json!({"poll": {
            "id": "5210000000000000001", "question": "Lunch?", "type": "regular",
            "options": [{"text": "yes", "voter_count": 0}, {"text": "no", "voter_count": 0}],
            "total_voter_count": 0, "is_closed": false, "is_anonymous": true,
            "allows_multiple_answers": false,
        }})
    }

    /// A kind from a future Bot API version (teloxide: `UpdateKind::Error`).
    pub fn unknown_update(&self) -> Value {
        json!({"fake_future_kind": {"id": 1, "note": "not in any Bot API version"}})
    }

    /// Every successful sendMessage, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.lock().sent.clone()
    }

    /// The params of every call of `method` (any case) with the right token,
    /// in order, including the ones answered with an error.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        let method = method.to_ascii_lowercase();
        let state = self.lock();
        state
            .calls
            .iter()
            .filter(|(m, _)| *m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Like [`FakeTelegram::calls`], with the moment each call came.
    pub fn timed_calls(&self, method: &str) -> Vec<(std::time::Instant, Value)> {
        let method = method.to_ascii_lowercase();
        let state = self.lock();
        state
            .calls
            .iter()
            .zip(&state.called_at)
            .filter(|((m, _), _)| *m == method)
            .map(|((_, p), at)| (*at, p.clone()))
            .collect()
    }

    /// The bot's messages in `chat_id` as they stand now — edited, and
    /// without those deleted — as (message id, text, entities), oldest first.
    pub fn bot_messages(&self, chat_id: i64) -> Vec<(i64, String, Value)> {
        let state = self.lock();
        let bot = &state.bot["id"];
        let mut messages: Vec<_> = state
            .messages
            .iter()
            .filter(|((chat, _), message)| *chat == chat_id && message["from"]["id"] == *bot)
            .map(|((_, id), message)| {
                let text = message["text"].as_str().unwrap_or_default().to_owned();
                (*id, text, message.get("entities").cloned().unwrap_or(Value::Null))
            })
            .collect();
        messages.sort_by_key(|(id, _, _)| *id);
        messages
    }

    /// Waits until the bot's messages in `chat_id`, as they stand after a
    /// call, pass `check` (each call is a step: a message sent, edited or
    /// deleted), and returns them.
    ///
    /// # Panics
    /// If they do not within `timeout`.
    pub async fn chat_settles(
        &self,
        chat_id: i64,
        timeout: Duration,
        check: impl Fn(&[(i64, String, Value)]) -> bool,
    ) -> Vec<(i64, String, Value)> {
        let settled = wait_on(&self.shared.called, timeout, || {
            let messages = self.bot_messages(chat_id);
            check(&messages).then_some(messages)
        });
        settled.await.unwrap_or_else(|| {
            let messages = self.bot_messages(chat_id);
            panic!("the chat did not settle within {timeout:?}: {messages:#?}")
        })
    }

    /// Waits until the draft `draft` is gone from `chat_id` and the answer
    /// to `/stop` is there (see [`FakeTelegram::chat_settles`]).
    pub async fn stopped_draft_settles(
        &self,
        chat_id: i64,
        draft: i64,
        timeout: Duration,
    ) -> Vec<(i64, String, Value)> {
        self.chat_settles(chat_id, timeout, |messages| {
            messages.iter().all(|(id, _, _)| *id != draft)
                && messages.iter().any(|(_, text, _)| text.starts_with("Stopped."))
        })
        .await
    }

    /// The highest `offset` getUpdates has confirmed (0 if none yet).
    pub fn confirmed_offset(&self) -> i64 {
        self.lock().confirmed
    }

    /// Waits until getUpdates confirmed the update `id` (asked for what
    /// comes after it): the daemon has decided about it.
    ///
    /// # Panics
    /// If it was not confirmed within `timeout`.
    pub async fn wait_for_confirmed(&self, id: i64, timeout: Duration) {
        let what = format!("update {id} confirmed");
        self.wait_until(&what, timeout, |state| (state.confirmed > id).then_some(()))
            .await
    }

    /// How many getUpdates calls were answered, a failure set with
    /// [`FakeTelegram::fail_next`] aside: a poll the client gave up on
    /// before its answer is not counted.
    pub fn polls_answered(&self) -> usize {
        self.lock().polls_answered
    }

    /// Updates queued and not yet confirmed.
    pub fn pending_updates(&self) -> usize {
        self.lock().pending.len()
    }

    /// Wait until at least `n` messages were sent and return all of them.
    ///
    /// # Panics
    /// If fewer than `n` were sent within `timeout`.
    pub async fn wait_for_sent(&self, n: usize, timeout: Duration) -> Vec<Sent> {
        let what = format!("{n} sendMessage(s)");
        self.wait_until(&what, timeout, |state| {
            (state.sent.len() >= n).then(|| state.sent.clone())
        })
        .await
    }

    /// Wait until at least `n` messages were sent to `chat` and return those.
    ///
    /// # Panics
    /// If fewer than `n` were sent there within `timeout`.
    pub async fn wait_for_sent_to(&self, chat: i64, n: usize, timeout: Duration) -> Vec<Sent> {
        let what = format!("{n} sendMessage(s) to {chat}");
        self.wait_until(&what, timeout, |state| {
            let to: Vec<Sent> = state.sent.iter().filter(|s| s.chat_id == chat).cloned().collect();
            (to.len() >= n).then_some(to)
        })
        .await
    }

    /// The first successful sendMessage satisfying `wanted`, waiting up to
    /// `timeout` for it; `None` if none came.
    pub async fn sent_matching(&self, timeout: Duration, wanted: impl Fn(&Sent) -> bool) -> Option<Sent> {
        wait_on(&self.shared.called, timeout, || {
            self.lock().sent.iter().find(|sent| wanted(sent)).cloned()
        })
        .await
    }

    /// Wait until `method` (any case) was called at least `n` times and return
    /// the params of all its calls.
    ///
    /// # Panics
    /// If it was called fewer than `n` times within `timeout`.
    pub async fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let method = method.to_ascii_lowercase();
        let what = format!("{n} call(s) of {method}");
        self.wait_until(&what, timeout, |state| {
            let calls: Vec<Value> = state
                .calls
                .iter()
                .filter(|(m, _)| *m == method)
                .map(|(_, p)| p.clone())
                .collect();
            (calls.len() >= n).then_some(calls)
        })
        .await
    }

    /// Answer the next call of `method` (any case) with `failure`; several queue up.
    pub fn fail_next(&self, method: &str, failure: FakeFailure) {
        let method = method.to_ascii_lowercase();
        self.lock().failures.entry(method).or_default().push_back(failure);
    }

    /// Answer a call of `method` (any case) with `failure` once `successes`
    /// more calls of it were answered normally: e.g. the second part of a
    /// reply with `fail_after("sendMessage", 1, …)`.
    pub fn fail_after(&self, method: &str, successes: usize, failure: FakeFailure) {
        let method = method.to_ascii_lowercase();
        self.lock().failing_after.insert(method, (successes, failure));
    }

    /// Every successful file upload (sendDocument, sendPhoto), in order.
    pub fn uploads(&self) -> Vec<Uploaded> {
        self.lock().uploads.clone()
    }

    /// Wait until at least `n` files were uploaded and return all of them.
    ///
    /// # Panics
    /// If fewer than `n` were uploaded within `timeout`.
    pub async fn wait_for_uploads(&self, n: usize, timeout: Duration) -> Vec<Uploaded> {
        let what = format!("{n} upload(s)");
        self.wait_until(&what, timeout, |state| {
            (state.uploads.len() >= n).then(|| state.uploads.clone())
        })
        .await
    }

    /// Delay every answer to `method` by `delay` (after recording the call).
    pub fn set_delay(&self, method: &str, delay: Duration) {
        self.lock().delays.insert(method.to_ascii_lowercase(), delay);
    }

    /// Pretend a webhook is set: getUpdates answers 409 until deleteWebhook.
    pub fn set_webhook(&self, url: &str) {
        self.lock().webhook = Some(url.to_owned());
    }

    /// Stop serving: new connections are refused and open ones (long polls
    /// included) are cut.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }

    /// Allocate, store and return an incoming message with `extra` fields.
    fn incoming(&self, chat_id: i64, user_id: i64, extra: Value) -> Value {
        let mut state = self.lock();
        let chat = state
            .chats
            .get(&chat_id)
            .cloned()
            .unwrap_or_else(|| chat(chat_id, user_id));
        state.chats.insert(chat_id, chat.clone());
        let message_id = state.next_message_id;
        state.next_message_id += 1;
        let mut message = json!({"message_id": message_id, "date": now(), "chat": chat, "from": user(user_id)});
        merge(&mut message, extra);
        state.messages.insert((chat_id, message_id), message.clone());
        message
    }

    async fn wait_until<T>(&self, what: &str, timeout: Duration, done: impl Fn(&Recorded) -> Option<T>) -> T {
        let found = wait_on(&self.shared.called, timeout, || done(&self.lock()));
        found.await.unwrap_or_else(|| {
            let calls: Vec<String> = self.lock().calls.iter().map(|(m, _)| m.clone()).collect();
            panic!("fake Telegram: expected {what} within {timeout:?}; calls so far: {calls:?}")
        })
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.shared.lock()
    }
}

/// `mention` entities for every `@name` in `text`, with Telegram's UTF-16 offsets.
fn mention_entities(text: &str) -> Vec<Value> {
    let mut entities = Vec::new();
    let mut offset = 0;
    for word in text.split_inclusive(char::is_whitespace) {
        let name = word.trim_end();
        if name.len() > 1 && name.starts_with('@') {
            entities.push(json!({"type": "mention", "offset": offset, "length": name.encode_utf16().count()}));
        }
        offset += word.encode_utf16().count();
    }
    entities
}
