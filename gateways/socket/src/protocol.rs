//! The wire protocol of the local socket, version 1: one JSON object per line,
//! tagged by its `"type"` field.
//!
//! A client opens with `hello`, which carries the daemon's key (a client
//! without it is refused and closed), names the chat it speaks in, and then sends
//! `message`, `status`, `approvals`, `decide`, `decide_all`, `rules`,
//! `revoke_rule`, `loops`, `stop_loop`, `start_loop`, `trigger_loop`, `access`, `web`, `reload` and `ping` frames. The daemon answers each message with
//! `accepted`, `duplicate` or `error`, and sends `reply`, `draft`,
//! `stopped`, `approval`, `file` and `typing` frames whenever the core has
//! something for the client's chat (a `draft` is a reply while it is
//! written; `stopped` ends a draft whose turn `/stop` stopped). A client
//! skips a frame whose type it does not know, so a daemon can add one (as
//! `file` and `stopped` were) without breaking clients of the same version. Ids
//! are the contract's validated newtypes, so a frame that parses carries only
//! valid ids; one that does not is answered with `bad_frame`.

use std::fmt;

pub use passepartout_admin::{
    AccessAnswer, AccessRequest, AdminRequest, DashboardRequest, LoopControl, Reloaded, WebAnswer, WebRequest,
};
use passepartout_gateway::{ApprovalToken, ChatId, MessageId, ReplyKind, UserId};
use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks; a client says which one it speaks in `hello`.
pub const PROTOCOL_VERSION: u32 = 1;

/// A frame from a client to the daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Opens (or re-opens) a session: the protocol version, the chat to
    /// speak in (`uid-<uid>` when omitted), and the daemon's key, read from
    /// the file beside the socket (see [`crate::key`]). Without the right key
    /// the connection is refused.
    Hello {
        /// The protocol version the client speaks.
        version: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The chat to speak in; `uid-<uid>` when omitted.
        chat: Option<ChatId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The daemon's key, from the file beside the socket.
        key: Option<String>,
    },
    /// A message typed by the person. Without an `id` the daemon makes one up,
    /// which means a resent message cannot be recognized as a duplicate.
    Message {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The message's id, for its ack and to tell a resent one.
        id: Option<MessageId>,
        /// What the person typed.
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The message this one answers, if any.
        reply_to: Option<MessageId>,
    },
    /// Asks for a `pong`.
    Ping {},
    /// An admin request, carried as it is: its own `"type"` and fields
    /// ([`AdminRequest`]), answered with the frame [`crate::admin`] makes
    /// of the core's reply.
    #[serde(untagged)]
    Admin(AdminRequest),
}

/// The `"type"`s of the frames a client may send, to tell an unknown type
/// from a bad frame: `hello`, `message`, every admin request the socket
/// serves, and `ping`.
pub(crate) fn client_frame_types() -> &'static [&'static str] {
    static TYPES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let admin = AdminRequest::KINDS
            .into_iter()
            .filter(|kind| !NOT_SERVED.contains(kind));
        ["hello", "message"].into_iter().chain(admin).chain(["ping"]).collect()
    });
    &TYPES
}

/// The admin requests only the web dashboard asks: no frame of the socket.
const NOT_SERVED: [&str; 1] = ["dashboard"];

/// A frame from the daemon to a client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The answer to `hello`: the chat this connection now speaks in, and who
    /// the daemon takes the client to be (its uid).
    Welcome {
        /// The protocol version the daemon speaks.
        version: u32,
        /// The chat this connection speaks in.
        chat: ChatId,
        /// Who the daemon takes the client to be (its uid).
        user: UserId,
        /// The longest message the daemon accepts, in bytes, so that a client
        /// can refuse a larger one before sending it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_message_bytes: Option<u64>,
    },
    /// The message with this id is in the daemon's journal and will be answered.
    Accepted {
        /// The message's id.
        id: String,
    },
    /// The message with this id was accepted before; it is not processed again.
    Duplicate {
        /// The message's id.
        id: String,
    },
    /// A text from the assistant (or the daemon) in `chat`.
    Reply {
        /// The outbound message's id.
        id: String,
        /// The chat it is in.
        chat: ChatId,
        /// The id of the client's message this answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_reply_to: Option<String>,
        /// The text, Markdown.
        text: String,
        #[serde(default)]
        /// An answer, a notice or a failure.
        kind: ReplyKind,
        /// This reply is what the draft the client was shown became: a
        /// client that printed the draft's text need not print it again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        drafted: bool,
    },
    /// The assistant's reply as it is being written: `text` continues what
    /// the draft showed so far or, with `restart`, replaces it (the model
    /// started over; an empty text withdraws the draft).
    Draft {
        /// The chat it is in.
        chat: ChatId,
        /// The id of the client's message the reply answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_reply_to: Option<String>,
        /// The text, to add to the draft (or, with `restart`, to show instead).
        text: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        /// The text replaces what the draft showed.
        restart: bool,
    },
    /// The reply the client was shown as a draft was stopped (`/stop`)
    /// before it was finished: the draft ends here and no `reply` takes it
    /// over. `text` is the whole text the draft showed (Markdown, possibly
    /// several lines; empty when the daemon restarted in between and no
    /// longer knows it), for the client to show as one line marked stopped
    /// in place of the draft. The answer to `/stop` follows as a `reply`.
    Stopped {
        /// The outbound message's id, the same if it is sent again.
        id: String,
        /// The chat it was in.
        chat: ChatId,
        /// The id of the client's message the stopped reply answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_reply_to: Option<String>,
        #[serde(default)]
        /// The text the draft showed.
        text: String,
    },
    /// The assistant asks to approve an action; answer with `token`.
    Approval {
        /// The outbound message's id.
        id: String,
        /// The chat it is in.
        chat: ChatId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The id of the client's message the turn answers.
        in_reply_to: Option<String>,
        /// The token that answers it (`decide`).
        token: ApprovalToken,
        /// The action waiting, in short.
        action: String,
        /// The prompt, for people.
        text: String,
    },
    /// The assistant sends a file from its workspace: a local client reads
    /// it where it is, at `path`.
    File {
        /// The outbound message's id.
        id: String,
        /// The chat it is in.
        chat: ChatId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The id of the client's message the turn answers.
        in_reply_to: Option<String>,
        /// Where the file is.
        path: String,
        /// The file's name.
        name: String,
        /// Its media type.
        media_type: String,
        /// Its size, in bytes.
        size: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// What the assistant says of it.
        caption: Option<String>,
    },
    /// The assistant is working on an answer in `chat`.
    Typing {
        /// The chat.
        chat: ChatId,
    },
    /// The daemon's status document.
    Status {
        /// The document.
        status: serde_json::Value,
    },
    /// The answer to `approvals`, `decide` or `decide_all`: a JSON document.
    Approvals {
        /// The listing, or what came of a decision.
        approvals: serde_json::Value,
    },
    /// The answer to `rules` (`{"rules": […]}`) or `revoke_rule`
    /// (`{"revoked": …, "message": …}`).
    Rules {
        /// The listing, or what came of a revoke.
        rules: serde_json::Value,
    },
    /// The answer to `loops`: a JSON list, one status per loop.
    Loops {
        /// One status per loop.
        loops: serde_json::Value,
    },
    /// The answer to `tools`: a JSON list, one per tool.
    Tools {
        /// One line per tool.
        tools: serde_json::Value,
    },
    /// The answer to `stop_loop`, `start_loop` or `trigger_loop`.
    LoopControl(LoopControl),
    /// The answer to `access`.
    Access(AccessAnswer),
    /// The answer to `web`.
    Web(WebAnswer),
    /// The answer to `reload`.
    Reloaded(Reloaded),
    /// The answer to `ping`.
    Pong {},
    /// Something went wrong with a frame; `id` names the message concerned, if any.
    Error {
        /// What went wrong.
        code: ErrorCode,
        /// Why, for people.
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The message concerned, if any.
        id: Option<String>,
    },
}

/// The `"type"` names of [`ServerFrame`]: a frame of another type comes
/// from a newer daemon, and a client skips it.
pub const SERVER_FRAME_TYPES: [&str; 20] = [
    "welcome",
    "accepted",
    "duplicate",
    "reply",
    "draft",
    "stopped",
    "approval",
    "file",
    "typing",
    "status",
    "approvals",
    "rules",
    "loops",
    "tools",
    "loop_control",
    "access",
    "web",
    "reloaded",
    "pong",
    "error",
];

/// Whether `line` is a JSON object of a type this version does not know
/// (so a client skips it rather than failing).
pub fn is_unknown_server_frame(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Tagged {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_slice::<Tagged>(line).is_ok_and(|tagged| !SERVER_FRAME_TYPES.contains(&tagged.kind.as_str()))
}

/// What went wrong, for a client to decide on (the `message` is for people).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The line was longer than the daemon accepts; it was skipped.
    LineTooLong,
    /// The line was not UTF-8.
    InvalidUtf8,
    /// The line was not JSON.
    InvalidJson,
    /// The frame's `"type"` is not one this protocol version knows.
    UnknownType,
    /// A known type with missing or wrong fields, or an invalid id.
    BadFrame,
    /// `hello` asked for a protocol version the daemon does not speak.
    UnsupportedVersion,
    /// The conversation's queue (or the daemon's connection limit) is full: retry later.
    Busy,
    /// The client may not use this daemon.
    NotAllowed,
    /// The message is larger than the daemon accepts.
    TooLarge,
    /// The daemon is shutting down and takes no more messages.
    ShuttingDown,
}

impl ErrorCode {
    /// The code as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LineTooLong => "line_too_long",
            Self::InvalidUtf8 => "invalid_utf8",
            Self::InvalidJson => "invalid_json",
            Self::UnknownType => "unknown_type",
            Self::BadFrame => "bad_frame",
            Self::UnsupportedVersion => "unsupported_version",
            Self::Busy => "busy",
            Self::NotAllowed => "not_allowed",
            Self::TooLarge => "too_large",
            Self::ShuttingDown => "shutting_down",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A line that is not a valid client frame, as the error frame that answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FrameError {
    pub code: ErrorCode,
    pub message: String,
    /// The message id, when the frame carried a valid one.
    pub id: Option<MessageId>,
}

impl FrameError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            id: None,
        }
    }

    pub fn into_frame(self) -> ServerFrame {
        ServerFrame::Error {
            code: self.code,
            message: self.message,
            id: self.id.map(String::from),
        }
    }
}

/// Parses one line (without its newline) into a client frame, classifying
/// what is wrong with it when it is not one.
pub(crate) fn parse_client_frame(line: &[u8]) -> Result<ClientFrame, FrameError> {
    let text = std::str::from_utf8(line)
        .map_err(|e| FrameError::new(ErrorCode::InvalidUtf8, format!("the line is not UTF-8: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| FrameError::new(ErrorCode::InvalidJson, format!("the line is not JSON: {e}")))?;
    let Some(kind) = value.get("type") else {
        return Err(FrameError::new(
            ErrorCode::BadFrame,
            "a frame is a JSON object with a \"type\" field",
        ));
    };
    let Some(kind) = kind.as_str().map(str::to_owned) else {
        return Err(FrameError::new(
            ErrorCode::BadFrame,
            "the \"type\" field must be a string",
        ));
    };
    if !client_frame_types().contains(&kind.as_str()) {
        let message = format!(
            "unknown frame type {:?}; known: {}",
            truncate(&kind),
            client_frame_types().join(", ")
        );
        return Err(FrameError::new(ErrorCode::UnknownType, message));
    }
    // Echo a valid id back, so a client can tell which message was bad.
    let id = value
        .get("id")
        .and_then(|id| id.as_str())
        .and_then(|id| MessageId::new(id).ok());
    let frame = match AdminRequest::KINDS.contains(&kind.as_str()) {
        true => serde_json::from_value(value).map(ClientFrame::Admin),
        false => serde_json::from_value(value),
    };
    frame.map_err(|e| FrameError {
        code: ErrorCode::BadFrame,
        message: format!("bad {kind} frame: {e}"),
        id,
    })
}

/// Keeps an echoed client value short.
fn truncate(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Serializes a frame as one line, newline included.
pub(crate) fn encode_line<T: Serialize>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = serde_json::to_vec(frame)?;
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn code_of(line: &[u8]) -> ErrorCode {
        parse_client_frame(line).expect_err("should not parse").code
    }

    #[test]
    fn client_frames_parse_from_their_wire_form() {
        let hello = parse_client_frame(br#"{"type":"hello","version":1,"chat":"work"}"#).unwrap();
        assert_eq!(
            hello,
            ClientFrame::Hello {
                version: 1,
                chat: Some(ChatId::new("work").unwrap()),
                key: None,
            }
        );
        let hello = parse_client_frame(br#"{"type":"hello","version":1,"key":"k"}"#).unwrap();
        assert_eq!(
            hello,
            ClientFrame::Hello {
                version: 1,
                chat: None,
                key: Some("k".into())
            }
        );
        let message = parse_client_frame(br#"{"type":"message","id":"m1","text":"hi"}"#).unwrap();
        assert_eq!(
            message,
            ClientFrame::Message {
                id: Some(MessageId::new("m1").unwrap()),
                text: "hi".into(),
                reply_to: None
            }
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"status"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::Status)
        );
        assert_eq!(parse_client_frame(br#"{"type":"ping"}"#).unwrap(), ClientFrame::Ping {});
        assert_eq!(
            parse_client_frame(br#"{"type":"loops"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::Loops)
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"stop_loop","name":"x"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::StopLoop { name: "x".into() })
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"start_loop","name":"x"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::StartLoop { name: "x".into() })
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"trigger_loop","name":"x"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::TriggerLoop { name: "x".into() })
        );
        assert_eq!(code_of(br#"{"type":"stop_loop"}"#), ErrorCode::BadFrame);
    }

    #[test]
    fn decisions_and_standing_rules_parse_from_their_wire_form() {
        assert_eq!(
            parse_client_frame(br#"{"type":"decide","token":"K7PX2Q","approve":true}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::Decide {
                token: "K7PX2Q".into(),
                approve: true,
                always: false,
            }),
            "a client that never heard of always"
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"decide","token":"K7PX2Q","approve":true,"always":true}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::Decide {
                token: "K7PX2Q".into(),
                approve: true,
                always: true,
            })
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"decide_all","approve":true,"conversation":"socket:work"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::DecideAll {
                approve: true,
                from: Some("socket:work".into()),
            })
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"decide_all","approve":false}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::DecideAll {
                approve: false,
                from: None,
            })
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"rules"}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::Rules)
        );
        assert_eq!(
            parse_client_frame(br#"{"type":"revoke_rule","rule":12}"#).unwrap(),
            ClientFrame::Admin(AdminRequest::RevokeRule { id: 12 })
        );
        assert_eq!(code_of(br#"{"type":"revoke_rule","rule":"12"}"#), ErrorCode::BadFrame);
        assert_eq!(code_of(br#"{"type":"decide_all"}"#), ErrorCode::BadFrame);
    }

    #[test]
    fn every_client_frame_type_is_known() {
        let frames = [
            ClientFrame::Hello {
                version: 1,
                chat: None,
                key: None,
            },
            ClientFrame::Message {
                id: None,
                text: String::new(),
                reply_to: None,
            },
            ClientFrame::Admin(AdminRequest::Status),
            ClientFrame::Admin(AdminRequest::Recheck),
            ClientFrame::Admin(AdminRequest::Approvals { all: true }),
            ClientFrame::Admin(AdminRequest::Decide {
                token: "K7PX2Q".into(),
                approve: true,
                always: true,
            }),
            ClientFrame::Admin(AdminRequest::DecideAll {
                approve: false,
                from: None,
            }),
            ClientFrame::Admin(AdminRequest::Rules),
            ClientFrame::Admin(AdminRequest::RevokeRule { id: 3 }),
            ClientFrame::Admin(AdminRequest::Loops),
            ClientFrame::Admin(AdminRequest::StopLoop { name: "x".into() }),
            ClientFrame::Admin(AdminRequest::StartLoop { name: "x".into() }),
            ClientFrame::Admin(AdminRequest::TriggerLoop { name: "x".into() }),
            ClientFrame::Admin(AdminRequest::Access {
                request: AccessRequest::Approve {
                    code: "ABCD2345".into(),
                    approver: true,
                },
            }),
            ClientFrame::Admin(AdminRequest::Web {
                request: WebRequest::Revoke { id: "abcd".into() },
            }),
            ClientFrame::Admin(AdminRequest::Reload),
            ClientFrame::Ping {},
        ];
        for frame in frames {
            let value = serde_json::to_value(&frame).unwrap();
            let kind = value["type"].as_str().unwrap();
            assert!(
                client_frame_types().contains(&kind),
                "{kind} missing from the client's frame types"
            );
        }
    }

    #[test]
    fn an_admin_request_is_sent_as_it_is() {
        let decide = ClientFrame::Admin(AdminRequest::Decide {
            token: "K7PX2Q".into(),
            approve: true,
            always: false,
        });
        let line = encode_line(&decide).unwrap();
        assert_eq!(line, b"{\"type\":\"decide\",\"token\":\"K7PX2Q\",\"approve\":true}\n");
        assert_eq!(parse_client_frame(&line[..line.len() - 1]), Ok(decide));
    }

    #[test]
    fn bad_lines_are_classified() {
        assert_eq!(code_of(b"\xff\xfe{}"), ErrorCode::InvalidUtf8);
        assert_eq!(code_of(b"{not json"), ErrorCode::InvalidJson);
        assert_eq!(code_of(br#"{"type":"launch"}"#), ErrorCode::UnknownType);
        assert_eq!(
            code_of(br#"{"type":"dashboard","request":{"ask":"config"}}"#),
            ErrorCode::UnknownType,
            "only the web dashboard asks for its documents"
        );
        assert_eq!(code_of(br#"{"text":"no type"}"#), ErrorCode::BadFrame);
        assert_eq!(code_of(br#"{"type":7}"#), ErrorCode::BadFrame);
        assert_eq!(code_of(b"[1,2]"), ErrorCode::BadFrame);
        assert_eq!(code_of(br#"{"type":"message","id":"m1"}"#), ErrorCode::BadFrame);
        assert_eq!(
            code_of(br#"{"type":"message","id":"","text":"x"}"#),
            ErrorCode::BadFrame
        );
        assert_eq!(code_of(br#"{"type":"hello","version":"one"}"#), ErrorCode::BadFrame);
    }

    #[test]
    fn a_bad_frame_echoes_its_valid_id() {
        let error = parse_client_frame(br#"{"type":"message","id":"m7"}"#).unwrap_err();
        assert_eq!(error.id, Some(MessageId::new("m7").unwrap()));
        let error = parse_client_frame(br#"{"type":"message","id":""}"#).unwrap_err();
        assert_eq!(error.id, None);
    }

    #[test]
    fn server_frames_have_the_documented_wire_form() {
        let reply = ServerFrame::Reply {
            id: "out-1".into(),
            chat: ChatId::new("work").unwrap(),
            in_reply_to: Some("m1".into()),
            text: "hello".into(),
            kind: ReplyKind::Answer,
            drafted: false,
        };
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"type":"reply","id":"out-1","chat":"work","in_reply_to":"m1","text":"hello","kind":"answer"})
        );
        let error = ServerFrame::Error {
            code: ErrorCode::LineTooLong,
            message: "long".into(),
            id: None,
        };
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"type":"error","code":"line_too_long","message":"long"})
        );
        assert_eq!(
            serde_json::to_value(ServerFrame::Pong {}).unwrap(),
            json!({"type":"pong"})
        );
        assert_eq!(
            serde_json::to_value(ServerFrame::Loops { loops: json!([]) }).unwrap(),
            json!({"type":"loops","loops":[]})
        );
        let stopped = ServerFrame::LoopControl(LoopControl {
            ok: true,
            message: "loop \"x\" stopped".into(),
        });
        let wire = json!({"type":"loop_control","ok":true,"message":"loop \"x\" stopped"});
        assert_eq!(serde_json::to_value(&stopped).unwrap(), wire);
        assert_eq!(serde_json::from_value::<ServerFrame>(wire).unwrap(), stopped);
    }

    #[test]
    fn a_file_frame_has_its_wire_form_and_every_type_is_known() {
        let file = ServerFrame::File {
            id: "7-1".into(),
            chat: ChatId::new("work").unwrap(),
            in_reply_to: None,
            path: "/w/report.pdf".into(),
            name: "report.pdf".into(),
            media_type: "application/pdf".into(),
            size: 12,
            caption: Some("the report".into()),
        };
        let wire = json!({"type":"file","id":"7-1","chat":"work","path":"/w/report.pdf","name":"report.pdf",
                          "media_type":"application/pdf","size":12,"caption":"the report"});
        assert_eq!(serde_json::to_value(&file).unwrap(), wire);
        assert_eq!(serde_json::from_value::<ServerFrame>(wire).unwrap(), file);
        let frames = [
            file,
            ServerFrame::Pong {},
            ServerFrame::Typing {
                chat: ChatId::new("w").unwrap(),
            },
        ];
        for frame in frames {
            let line = serde_json::to_vec(&frame).unwrap();
            assert!(!is_unknown_server_frame(&line), "{frame:?}");
        }
        assert!(is_unknown_server_frame(br#"{"type":"hologram","id":"1"}"#));
        assert!(!is_unknown_server_frame(b"not json"), "garbage is an error, not a skip");
    }

    #[test]
    fn a_stopped_frame_has_its_wire_form_and_is_known() {
        let stopped = ServerFrame::Stopped {
            id: "9-0".into(),
            chat: ChatId::new("work").unwrap(),
            in_reply_to: Some("m4".into()),
            text: "Half of\nan answer".into(),
        };
        let wire = json!({"type":"stopped","id":"9-0","chat":"work","in_reply_to":"m4","text":"Half of\nan answer"});
        assert_eq!(serde_json::to_value(&stopped).unwrap(), wire);
        assert_eq!(serde_json::from_value::<ServerFrame>(wire).unwrap(), stopped);
        let unknown_text = json!({"type":"stopped","id":"9-0","chat":"work"});
        assert!(
            matches!(serde_json::from_value(unknown_text).unwrap(), ServerFrame::Stopped { text, .. } if text.is_empty()),
            "a text the daemon no longer knows may be left out"
        );
        assert!(!is_unknown_server_frame(&serde_json::to_vec(&stopped).unwrap()));
    }

    #[test]
    fn error_codes_display_as_on_the_wire() {
        for code in [
            ErrorCode::LineTooLong,
            ErrorCode::UnsupportedVersion,
            ErrorCode::ShuttingDown,
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
            assert_eq!(code.to_string(), code.as_str());
        }
    }

    #[test]
    fn encoded_frames_are_one_line() {
        let frame = ServerFrame::Status {
            status: json!({"text": "a\nb"}),
        };
        let line = encode_line(&frame).unwrap();
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
    }

    /// Property tests: no line a client sends makes the parser panic; each is
    /// a frame (which encodes back to itself) or refused with a reason. The
    /// lines are drawn as frames with the protocol's real field names, as any
    /// JSON (nested however deep) and as any bytes.
    mod props {
        use passepartout_gateway_testing::json::{any_json, config, deep, object};
        use proptest::prelude::*;
        use serde_json::Value;

        use super::super::*;

        const KEYS: &[&str] = &[
            "type",
            "version",
            "chat",
            "id",
            "text",
            "reply_to",
            "all",
            "token",
            "approve",
            "always",
            "conversation",
            "rule",
            "name",
        ];
        const WORDS: &[&str] = &[
            "hello",
            "message",
            "status",
            "decide",
            "stop_loop",
            "ping",
            "work",
            "m1",
            "K7PX2Q",
            "",
        ];

        fn other() -> BoxedStrategy<Value> {
            prop_oneof![4 => any_json(KEYS, WORDS), 1 => deep(any_json(KEYS, WORDS), "type")].boxed()
        }

        fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
            prop::sample::select(words).prop_map(Value::from).boxed()
        }

        fn text() -> BoxedStrategy<Value> {
            prop_oneof!["\\PC{0,16}".prop_map(Value::from), word(WORDS)].boxed()
        }

        /// A frame of a known or unknown type with plausible fields.
        fn frame() -> BoxedStrategy<Value> {
            let mut types = client_frame_types().to_vec();
            types.push("shout");
            let kind = prop::sample::select(types).prop_map(Value::from).boxed();
            object(
                vec![
                    ("type", kind),
                    ("version", (0u64..3).prop_map(Value::from).boxed()),
                    ("chat", text()),
                    ("id", text()),
                    ("text", text()),
                    ("reply_to", text()),
                    ("all", any::<bool>().prop_map(Value::from).boxed()),
                    ("token", text()),
                    ("approve", any::<bool>().prop_map(Value::from).boxed()),
                    ("always", any::<bool>().prop_map(Value::from).boxed()),
                    ("conversation", text()),
                    ("rule", (0u64..100).prop_map(Value::from).boxed()),
                    ("name", text()),
                ],
                other(),
            )
        }

        /// Parses `line` and checks the outcome; whether it was a frame.
        fn check(line: &[u8]) -> bool {
            match parse_client_frame(line) {
                Ok(frame) => {
                    let encoded = encode_line(&frame).expect("a frame encodes");
                    assert_eq!(parse_client_frame(&encoded[..encoded.len() - 1]), Ok(frame));
                    true
                }
                Err(error) => {
                    assert!(!error.message.is_empty(), "a refusal says why");
                    false
                }
            }
        }

        proptest! {
            #![proptest_config(config())]

            #[test]
            fn every_frame_shaped_line_is_a_frame_or_refused_with_a_reason(frame in frame()) {
                check(frame.to_string().as_bytes());
            }

            #[test]
            fn any_json_line_is_a_frame_or_refused_with_a_reason(value in other()) {
                check(value.to_string().as_bytes());
            }

            #[test]
            fn any_bytes_are_a_frame_or_refused_with_a_reason(line in prop::collection::vec(any::<u8>(), 0..64)) {
                check(&line);
            }
        }

        #[test]
        fn the_drawn_frames_are_sometimes_frames_and_sometimes_refused() {
            use proptest::strategy::ValueTree;
            let mut runner = proptest::test_runner::TestRunner::deterministic();
            let strategy = frame();
            let parsed: Vec<bool> = (0..256)
                .map(|_| strategy.new_tree(&mut runner).expect("a frame is drawn").current())
                .map(|frame| check(frame.to_string().as_bytes()))
                .collect();
            assert!(parsed.contains(&true), "none parsed");
            assert!(parsed.contains(&false), "none refused");
        }
    }
}
