//! The Bot API methods the fake answers, and the parsing of their parameters.

use std::collections::VecDeque;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::entities::check_entities;
use super::*;

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(super) async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(token) = bot.strip_prefix("bot") else {
        return error_response(ApiError::new(404, "Not Found"));
    };
    if token != shared.token {
        return error_response(ApiError::new(401, "Unauthorized"));
    }
    let method = method.to_ascii_lowercase();
    let parsed = if is_multipart(&headers) {
        parse_multipart(&headers, body).await
    } else {
        parse_params(query.as_deref(), &body).map(|params| (params, Vec::new()))
    };
    let (params, files) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => return error_response(error),
    };
    let (failure, delay, generation) = {
        let mut state = shared.lock();
        state.calls.push((method.clone(), params.clone()));
        state.called_at.push(std::time::Instant::now());
        let failure = state
            .failures
            .get_mut(&method)
            .and_then(VecDeque::pop_front)
            .or_else(|| state.failure_due(&method));
        if method == "getupdates" && failure.is_none() {
            state.poll_generation += 1;
        }
        (failure, state.delays.get(&method).copied(), state.poll_generation)
    };
    shared.called.notify_waiters();
    if method == "getupdates" {
        // Ends an older long poll with 409, as Telegram does.
        shared.queued.notify_waiters();
    }
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let answer = match failure {
        Some(FakeFailure::NotJson) => return not_json_response(),
        Some(FakeFailure::Hang) => std::future::pending().await,
        Some(failure) => Err(failure.into()),
        None if method == "getupdates" => {
            let answer = get_updates(&shared, &params, generation).await;
            // Counted when answered: a poll the client gave up on is
            // answered later, if ever.
            shared.lock().polls_answered += 1;
            answer
        }
        None if matches!(method.as_str(), "senddocument" | "sendphoto") => {
            send_file(&mut shared.lock(), &method, &params, files)
        }
        None => answer(&mut shared.lock(), &method, &params),
    };
    // Again once answered: what the call recorded (a message sent, an
    // upload) is there now, for whoever waits on it.
    shared.called.notify_waiters();
    match answer {
        Ok(result) => ok_response(&result),
        Err(error) => error_response(error),
    }
}

/// `GET /file/bot<TOKEN>/<file_path>`: a registered file's bytes, as its
/// [`Download`] says.
pub(super) async fn download(State(shared): State<Arc<Shared>>, Path((bot, path)): Path<(String, String)>) -> Response {
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return error_response(ApiError::new(401, "Unauthorized"));
    }
    let file = {
        let mut state = shared.lock();
        state.downloads.push(path.clone());
        path.strip_prefix(FILE_PATH_PREFIX)
            .and_then(|id| state.files.get(id))
            .cloned()
    };
    shared.called.notify_waiters();
    let Some(file) = file else {
        return error_response(ApiError::new(404, "Not Found"));
    };
    let content_type = file
        .content_type
        .clone()
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    let body = match file.download {
        Download::Status(code) => return error_response(ApiError::new(code, "Not Found")),
        Download::Whole => Body::from(file.bytes),
        Download::Streamed => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = file
                .bytes
                .chunks(1024)
                .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
                .collect();
            Body::from_stream(futures::stream::iter(chunks))
        }
        Download::Endless => Body::from_stream(futures::stream::repeat_with(|| {
            Ok::<_, std::io::Error>(Bytes::from_static(&[0x55; 16 * 1024]))
        })),
    };
    ([(CONTENT_TYPE, content_type)], body).into_response()
}

impl Recorded {
    /// The failure scheduled by `fail_after` for this call of `method`, if
    /// it is due; a call that is not due counts as one more success.
    fn failure_due(&mut self, method: &str) -> Option<FakeFailure> {
        let (successes, _) = self.failing_after.get_mut(method)?;
        if *successes > 0 {
            *successes -= 1;
            return None;
        }
        self.failing_after.remove(method).map(|(_, failure)| failure)
    }
}

pub(super) async fn get_updates(shared: &Shared, params: &Value, generation: u64) -> Result<Value, ApiError> {
    let offset = int(params, "offset").unwrap_or(0);
    let limit = int(params, "limit").unwrap_or(100).clamp(1, 100) as usize;
    let timeout = int(params, "timeout").unwrap_or(0).clamp(0, 50) as u64;
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let queued = shared.queued.notified();
        tokio::pin!(queued);
        queued.as_mut().enable();
        {
            let mut state = shared.lock();
            if state.webhook.is_some() {
                return Err(ApiError::new(
                    409,
                    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
                ));
            }
            if state.poll_generation != generation {
                return Err(FakeFailure::Conflict.into());
            }
            if offset > 0 {
                state
                    .pending
                    .retain(|u| u["update_id"].as_i64().is_some_and(|id| id >= offset));
                state.confirmed = state.confirmed.max(offset);
            } else if offset < 0 {
                let keep = offset.unsigned_abs() as usize;
                let drop = state.pending.len().saturating_sub(keep);
                state.pending.drain(..drop);
            }
            if !state.pending.is_empty() || Instant::now() >= deadline {
                return Ok(Value::Array(state.pending.iter().take(limit).cloned().collect()));
            }
        }
        // On timeout, loop once more to answer with whatever is queued (usually []).
        let _ = tokio::time::timeout_at(deadline, queued).await;
    }
}

pub(super) fn answer(state: &mut Recorded, method: &str, params: &Value) -> Result<Value, ApiError> {
    match method {
        "getme" => {
            let mut me = state.bot.clone();
            merge(
                &mut me,
                json!({"can_join_groups": true, "can_read_all_group_messages": false,
                       "supports_inline_queries": false, "can_connect_to_business": false,
                       "has_main_web_app": false}),
            );
            Ok(me)
        }
        "getwebhookinfo" => Ok(json!({
            "url": state.webhook.clone().unwrap_or_default(),
            "has_custom_certificate": false,
            "pending_update_count": state.pending.len(),
        })),
        "deletewebhook" => {
            state.webhook = None;
            if params["drop_pending_updates"] == true {
                state.pending.clear();
            }
            Ok(json!(true))
        }
        "sendmessage" => send_message(state, params),
        "sendchataction" => {
            chat_id(params)?;
            params["action"]
                .as_str()
                .ok_or_else(|| ApiError::bad_request("action is empty"))?;
            Ok(json!(true))
        }
        "answercallbackquery" => {
            let id = params["callback_query_id"].as_str().unwrap_or_default();
            if !state.open_callbacks.remove(id) {
                return Err(ApiError::bad_request(
                    "query is too old and response timeout expired or query ID is invalid",
                ));
            }
            Ok(json!(true))
        }
        "editmessagetext" => {
            let text = params["text"].as_str().unwrap_or_default();
            check_text(text)?;
            check_entities(text, &params["entities"])?;
            if shown(state, params).is_some_and(|message| message.get("text").is_none()) {
                return Err(ApiError::bad_request("there is no text in the message to edit"));
            }
            edit(state, params, Some(text))
        }
        "editmessagecaption" => {
            let caption = params["caption"].as_str().unwrap_or_default();
            check_entities(caption, &params["caption_entities"])?;
            let message = shown(state, params).ok_or_else(|| ApiError::bad_request("message to edit not found"))?;
            if message.get("text").is_some() {
                return Err(ApiError::bad_request("there is no caption in the message to edit"));
            }
            let chat_id = chat_id(params)?;
            let message_id = int(params, "message_id").unwrap_or_default();
            let message = state.messages.get_mut(&(chat_id, message_id)).expect("found above");
            message["caption"] = json!(caption);
            message["edit_date"] = json!(now());
            Ok(message.clone())
        }
        "deletemessage" => {
            let chat_id = chat_id(params)?;
            let message_id = int(params, "message_id")
                .ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?;
            state
                .messages
                .remove(&(chat_id, message_id))
                .ok_or_else(|| ApiError::bad_request("message to delete not found"))?;
            Ok(json!(true))
        }
        "editmessagereplymarkup" => edit(state, params, None),
        "getfile" => {
            let id = params["file_id"].as_str().unwrap_or_default();
            let file = state
                .files
                .get(id)
                .ok_or_else(|| ApiError::bad_request("invalid file_id"))?;
            let mut found = json!({"file_id": id, "file_unique_id": format!("AgADu{id}"),
                                   "file_path": format!("{FILE_PATH_PREFIX}{id}")});
            if let Some(size) = file.declared_size {
                found["file_size"] = json!(size);
            }
            Ok(found)
        }
        "setmycommands" => {
            params["commands"]
                .as_array()
                .ok_or_else(|| ApiError::bad_request("parameter \"commands\" is required"))?;
            Ok(json!(true))
        }
        _ => Err(ApiError::new(404, "Not Found")),
    }
}

pub(super) fn send_message(state: &mut Recorded, params: &Value) -> Result<Value, ApiError> {
    let chat_id = chat_id(params)?;
    let text = params["text"].as_str().unwrap_or_default();
    check_text(text)?;
    check_entities(text, &params["entities"])?;
    let markup = markup(params)?;
    let reply = &params["reply_parameters"];
    let reply_to = reply["message_id"]
        .as_i64()
        .or_else(|| int(params, "reply_to_message_id"));
    let chat = state
        .chats
        .get(&chat_id)
        .cloned()
        .unwrap_or_else(|| chat(chat_id, chat_id));
    let message_id = state.next_message_id;
    state.next_message_id += 1;
    let mut message =
        json!({"message_id": message_id, "date": now(), "chat": chat, "from": state.bot.clone(), "text": text});
    if let Some(to) = reply_to {
        let reply_chat = reply["chat_id"].as_i64().unwrap_or(chat_id);
        match state.messages.get(&(reply_chat, to)) {
            Some(replied) => {
                let mut replied = replied.clone();
                replied.as_object_mut().map(|m| m.remove("reply_to_message"));
                message["reply_to_message"] = replied;
            }
            None if reply["allow_sending_without_reply"] == true => {}
            None => return Err(ApiError::bad_request("message to be replied not found")),
        }
    }
    if let Some(entities) = params.get("entities").filter(|entities| !entities.is_null()) {
        message["entities"] = entities.clone();
    }
    // Telegram echoes only inline keyboards back.
    if let Some(markup) = markup.as_ref().filter(|m| m.get("inline_keyboard").is_some()) {
        message["reply_markup"] = markup.clone();
    }
    state.messages.insert((chat_id, message_id), message.clone());
    state.sent.push(Sent {
        message_id,
        chat_id,
        text: text.to_owned(),
        reply_to_message_id: reply_to,
        reply_markup: markup,
        params: params.clone(),
    });
    Ok(message)
}

/// editMessageText (`text` given) or editMessageReplyMarkup; no markup removes it.
/// The stored message `params` name, if there is one.
fn shown<'a>(state: &'a Recorded, params: &Value) -> Option<&'a Value> {
    let chat_id = chat_id(params).ok()?;
    let message_id = int(params, "message_id")?;
    state.messages.get(&(chat_id, message_id))
}

pub(super) fn edit(state: &mut Recorded, params: &Value, text: Option<&str>) -> Result<Value, ApiError> {
    let chat_id = chat_id(params)?;
    let message_id =
        int(params, "message_id").ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?;
    let markup = markup(params)?.filter(|m| m["inline_keyboard"].as_array().is_some_and(|rows| !rows.is_empty()));
    let bot_id = state.bot["id"].clone();
    let message = state
        .messages
        .get_mut(&(chat_id, message_id))
        .ok_or_else(|| ApiError::bad_request("message to edit not found"))?;
    if message["from"]["id"] != bot_id {
        return Err(ApiError::bad_request("message can't be edited"));
    }
    let entities = params.get("entities").filter(|entities| !entities.is_null());
    let same_text = text.is_none_or(|text| message["text"] == text && message.get("entities") == entities);
    if same_text && message.get("reply_markup") == markup.as_ref() {
        return Err(ApiError::new(400, NOT_MODIFIED));
    }
    let object = message.as_object_mut().expect("messages are objects");
    if let Some(text) = text {
        object.insert("text".into(), json!(text));
        match params.get("entities").filter(|entities| !entities.is_null()) {
            Some(entities) => object.insert("entities".into(), entities.clone()),
            None => object.remove("entities"),
        };
    }
    match markup {
        Some(markup) => object.insert("reply_markup".into(), markup),
        None => object.remove("reply_markup"),
    };
    object.insert("edit_date".into(), json!(now()));
    Ok(message.clone())
}

pub(super) fn check_text(text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::bad_request("message text is empty"));
    }
    if text.encode_utf16().count() > MAX_TEXT_UTF16 {
        return Err(ApiError::bad_request("message is too long"));
    }
    Ok(())
}

pub(super) fn chat_id(params: &Value) -> Result<i64, ApiError> {
    int(params, "chat_id").ok_or_else(|| ApiError::bad_request("chat not found"))
}

/// `reply_markup`, with every callback_data checked against Telegram's limit.
pub(super) fn markup(params: &Value) -> Result<Option<Value>, ApiError> {
    let markup = match &params["reply_markup"] {
        Value::Null => return Ok(None),
        Value::String(text) => serde_json::from_str(text)
            .map_err(|_| ApiError::bad_request("can't parse reply keyboard markup JSON object"))?,
        other => other.clone(),
    };
    let buttons = markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten());
    for button in buttons {
        if let Some(data) = button.get("callback_data") {
            let len = data.as_str().map_or(0, str::len);
            if !(1..=MAX_CALLBACK_DATA).contains(&len) {
                return Err(ApiError::bad_request("BUTTON_DATA_INVALID"));
            }
        }
    }
    Ok(Some(markup))
}

/// An integer parameter, given as a JSON number or as a string of digits.
pub(super) fn int(params: &Value, name: &str) -> Option<i64> {
    match &params[name] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Params from the query string and a JSON or form-encoded body, merged.
pub(super) fn parse_params(query: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let mut params = form(query.unwrap_or_default());
    let body = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("body is not UTF-8"))?;
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        let parsed: Value = serde_json::from_str(trimmed).map_err(|_| ApiError::bad_request("can't parse JSON"))?;
        merge(&mut params, parsed);
    } else if !trimmed.is_empty() {
        merge(&mut params, form(trimmed));
    }
    // Some clients send nested objects as JSON strings, as form bodies must.
    for key in ["reply_parameters", "commands", "entities"] {
        if let Some(Ok(parsed)) = params[key].as_str().map(serde_json::from_str::<Value>) {
            params[key] = parsed;
        }
    }
    Ok(params)
}

pub(super) fn form(text: &str) -> Value {
    let mut map = Map::new();
    for pair in text.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        let value = match serde_json::from_str::<Value>(&value) {
            Ok(parsed @ (Value::Number(_) | Value::Bool(_))) => parsed,
            _ => Value::String(value),
        };
        map.insert(percent_decode(key), value);
    }
    Value::Object(map)
}

pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|d| d as u8)
}

pub(super) fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

/// The key of the one field of an update queued as raw text: its text.
pub(super) const RAW_TEXT: &str = "fake_raw_text";

/// `{"ok":true,"result":…}`, with every update queued as raw text spliced in verbatim.
pub(super) fn ok_response(result: &Value) -> Response {
    let result = match result {
        Value::Array(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|item| match item.get(RAW_TEXT).and_then(Value::as_str) {
                    Some(raw) => raw.to_owned(),
                    None => item.to_string(),
                })
                .collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    };
    let body = format!(r#"{{"ok":true,"result":{result}}}"#);
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

/// A proxy's error page: 502 and HTML, no JSON at all.
pub(super) fn not_json_response() -> Response {
    let page = format!("<html><body><h1>502 Bad Gateway</h1><p>{NOT_JSON_MARKER}</p></body></html>");
    (StatusCode::BAD_GATEWAY, [(CONTENT_TYPE, "text/html")], page).into_response()
}

pub(super) fn error_response(error: ApiError) -> Response {
    let mut body = json!({"ok": false, "error_code": error.code, "description": error.description});
    if let Some(secs) = error.retry_after {
        body["parameters"] = json!({"retry_after": secs});
    }
    let status = StatusCode::from_u16(error.code).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}

pub(super) fn user(user_id: i64) -> Value {
    json!({"id": user_id, "is_bot": false, "first_name": format!("User{user_id}"),
           "username": format!("user{user_id}"), "language_code": "en"})
}

pub(super) fn chat(chat_id: i64, user_id: i64) -> Value {
    if chat_id > 0 {
        json!({"id": chat_id, "type": "private", "first_name": format!("User{user_id}"),
               "username": format!("user{user_id}")})
    } else if chat_id < -1_000_000_000_000 {
        json!({"id": chat_id, "type": "supergroup", "title": format!("Fake supergroup {chat_id}")})
    } else {
        json!({"id": chat_id, "type": "group", "title": format!("Fake group {chat_id}")})
    }
}

/// A message the fake never saw, as the bot's: what callback buttons sit under.
pub(super) fn stand_in(state: &Recorded, chat_id: i64, message_id: i64) -> Value {
    let chat = state
        .chats
        .get(&chat_id)
        .cloned()
        .unwrap_or_else(|| chat(chat_id, chat_id));
    json!({"message_id": message_id, "date": now(), "chat": chat, "from": state.bot.clone(), "text": "…"})
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
