//! Files the bot uploads: `sendDocument` and `sendPhoto` as
//! `multipart/form-data` (as teloxide sends a file), parsed into the call's
//! params and its file parts, answered with a message carrying the file and
//! recorded as an [`Uploaded`].

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Request};
use serde_json::{Map, Value, json};

use super::methods::{chat, chat_id, now};
use super::*;

/// One file part of a multipart call.
#[derive(Clone, Debug, PartialEq)]
pub struct FilePart {
    /// The form field it came in (`document`, or a name `attach://` refers to).
    pub field: String,
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// One successful `sendDocument` or `sendPhoto`.
#[derive(Clone, Debug, PartialEq)]
pub struct Uploaded {
    /// `senddocument` or `sendphoto`.
    pub method: String,
    pub message_id: i64,
    pub chat_id: i64,
    pub file: FilePart,
    pub caption: Option<String>,
    pub reply_to_message_id: Option<i64>,
}

/// Whether `headers` announce a multipart body.
pub(super) fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("multipart/form-data"))
}

/// The text fields of a multipart body as params (JSON-looking ones
/// parsed), and its file parts.
pub(super) async fn parse_multipart(headers: &HeaderMap, body: Bytes) -> Result<(Value, Vec<FilePart>), ApiError> {
    let unreadable = |_| ApiError::bad_request("can't parse multipart/form-data");
    let mut request = Request::builder().body(Body::from(body)).expect("a request");
    if let Some(content_type) = headers.get(CONTENT_TYPE) {
        request.headers_mut().insert(CONTENT_TYPE, content_type.clone());
    }
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|_| ApiError::bad_request("can't parse multipart/form-data"))?;
    let mut params = Map::new();
    let mut files = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(str::to_owned);
        let bytes = field.bytes().await.map_err(unreadable)?;
        match file_name {
            Some(file_name) => files.push(FilePart {
                field: name,
                file_name,
                content_type,
                bytes: bytes.to_vec(),
            }),
            None => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let value = match serde_json::from_str::<Value>(&text) {
                    Ok(parsed @ (Value::Number(_) | Value::Bool(_) | Value::Object(_))) => parsed,
                    _ => Value::String(text),
                };
                params.insert(name, value);
            }
        }
    }
    Ok((Value::Object(params), files))
}

/// Answers `senddocument` or `sendphoto` with the file in `files`.
pub(super) fn send_file(
    state: &mut Recorded,
    method: &str,
    params: &Value,
    files: Vec<FilePart>,
) -> Result<Value, ApiError> {
    let field = if method == "sendphoto" { "photo" } else { "document" };
    // The file is its own part (`document=<file>`), or a part the field
    // names (`document=attach://<part>`), as teloxide sends it.
    let part = params[field]
        .as_str()
        .and_then(|value| value.strip_prefix("attach://"))
        .unwrap_or(field);
    let chat_id = chat_id(params)?;
    let file = files
        .into_iter()
        .find(|file| file.field == part)
        .ok_or_else(|| ApiError::bad_request(&format!("there is no {field} in the request")))?;
    if file.bytes.is_empty() {
        return Err(ApiError::bad_request("file must be non-empty"));
    }
    let caption = params["caption"].as_str().map(str::to_owned);
    let reply_to = params["reply_parameters"]["message_id"].as_i64();
    let chat = state
        .chats
        .get(&chat_id)
        .cloned()
        .unwrap_or_else(|| chat(chat_id, chat_id));
    let message_id = state.next_message_id;
    state.next_message_id += 1;
    let file_id = format!("BQACfake-{message_id}");
    let meta =
        json!({"file_id": file_id, "file_unique_id": format!("AgADfake{message_id}"), "file_size": file.bytes.len()});
    let mut message = json!({"message_id": message_id, "date": now(), "chat": chat, "from": state.bot.clone()});
    if method == "sendphoto" {
        let mut size = meta;
        merge(&mut size, json!({"width": 640, "height": 480}));
        message["photo"] = json!([size]);
    } else {
        let mut document = meta;
        merge(&mut document, json!({"file_name": file.file_name}));
        if let Some(mime) = &file.content_type {
            document["mime_type"] = json!(mime);
        }
        message["document"] = document;
    }
    if let Some(caption) = &caption {
        message["caption"] = json!(caption);
    }
    state.messages.insert((chat_id, message_id), message.clone());
    state.uploads.push(Uploaded {
        method: method.to_owned(),
        message_id,
        chat_id,
        file,
        caption,
        reply_to_message_id: reply_to,
    });
    Ok(message)
}
