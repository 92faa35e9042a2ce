//! A socket session for tests that wait on frames in any order: each wait
//! takes the first frame it wants and keeps the others for later waits.

use std::collections::VecDeque;
use std::path::Path;

use passepartout_gateway::markup::{Flavor, render};
use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, SendOutcome, ServerFrame};

use super::harness::{TestDaemon, WAIT};

/// An approval prompt as the socket client received it.
#[derive(Debug)]
pub struct Prompt {
    pub id: String,
    pub token: String,
    pub action: String,
    /// Its text as a person reads it: the Markdown the frame carries,
    /// rendered as the terminal renders it.
    pub text: String,
    /// The Markdown the frame carried.
    pub markdown: String,
}

/// Markdown `text` as a terminal shows it, without highlighting.
pub fn shown(text: &str) -> String {
    render(text, Flavor::SPELLED).text
}

/// A socket session that waits for the frame it wants and keeps every other
/// one for later, so the order two frames arrive in never loses one.
pub struct Chat {
    pub client: Client,
    pub backlog: VecDeque<ServerFrame>,
}

impl Chat {
    pub async fn connect(socket: &Path, chat: &str) -> Chat {
        let chat = ChatId::new(chat).unwrap();
        let client = tokio::time::timeout(WAIT, Client::connect(socket, Some(chat)))
            .await
            .expect("connect in time")
            .expect("connect");
        Chat {
            client,
            backlog: VecDeque::new(),
        }
    }

    pub async fn open(daemon: &TestDaemon, chat: &str) -> Chat {
        Self::connect(&daemon.config.socket_path(), chat).await
    }

    /// `socket:UID`, as decisions name this person.
    pub fn person(&self) -> String {
        format!("socket:{}", self.client.user().as_str())
    }

    /// Sends `text` (replying to `reply_to`) and returns the message's id.
    pub async fn send_to(&mut self, text: &str, reply_to: Option<&str>) -> String {
        let (id, outcome) = tokio::time::timeout(WAIT, self.client.send(None, text, reply_to.map(str::to_owned)))
            .await
            .expect("ack in time")
            .expect("send");
        assert_eq!(outcome, SendOutcome::Accepted);
        id
    }

    pub async fn send(&mut self, text: &str) -> String {
        self.send_to(text, None).await
    }

    /// The first frame, kept or arriving, that `wanted` accepts.
    pub async fn take(&mut self, what: &str, wanted: impl Fn(&ServerFrame) -> bool) -> ServerFrame {
        if let Some(index) = self.backlog.iter().position(&wanted) {
            return self.backlog.remove(index).unwrap();
        }
        let client = &mut self.client;
        let backlog = &mut self.backlog;
        let found = tokio::time::timeout(WAIT, async {
            loop {
                let frame = client.next_event().await.expect("connection stays up");
                if wanted(&frame) {
                    return frame;
                }
                if !matches!(frame, ServerFrame::Typing { .. }) {
                    backlog.push_back(frame);
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no {what} within {WAIT:?}; other frames: {:#?}", self.backlog))
    }

    /// The approval prompt sent in answer to message `original`.
    pub async fn prompt(&mut self, original: &str) -> Prompt {
        let frame = self
            .take(
                &format!("approval prompt for {original}"),
                |frame| matches!(frame, ServerFrame::Approval { in_reply_to: Some(to), .. } if to == original),
            )
            .await;
        let ServerFrame::Approval {
            id,
            token,
            action,
            text,
            ..
        } = frame
        else {
            unreachable!()
        };
        Prompt {
            id,
            token: token.as_str().to_owned(),
            action,
            text: shown(&text),
            markdown: text,
        }
    }

    /// The next reply to message `id`.
    pub async fn reply(&mut self, id: &str) -> (ReplyKind, String) {
        let frame = self
            .take(
                &format!("reply to {id}"),
                |frame| matches!(frame, ServerFrame::Reply { in_reply_to: Some(to), .. } if to == id),
            )
            .await;
        let ServerFrame::Reply { kind, text, .. } = frame else {
            unreachable!()
        };
        (kind, text)
    }

    /// Whether a frame `wanted` accepts arrived and was not taken yet.
    pub fn backlog_has(&self, wanted: impl Fn(&ServerFrame) -> bool) -> bool {
        self.backlog.iter().any(wanted)
    }

    /// Whether a reply to message `id` arrived and was not taken yet.
    pub fn replied(&self, id: &str) -> bool {
        self.backlog
            .iter()
            .any(|frame| matches!(frame, ServerFrame::Reply { in_reply_to: Some(to), .. } if to == id))
    }

    /// The next reply to message `id`, which must be a notice, as a person
    /// reads it (rendered).
    pub async fn notice(&mut self, id: &str) -> String {
        let (kind, text) = self.reply(id).await;
        assert_eq!(kind, ReplyKind::Notice, "{text}");
        shown(&text)
    }

    /// Sends `text` and returns the notice answering it.
    pub async fn answer(&mut self, text: &str, reply_to: Option<&str>) -> String {
        let id = self.send_to(text, reply_to).await;
        self.notice(&id).await
    }

    /// Sends an ordinary message and waits for its echo. The conversation's
    /// turns run in order, so whatever an earlier message started in this
    /// conversation (an outcome to settle included) is done by then.
    pub async fn sync(&mut self, text: &str) {
        let id = self.send(text).await;
        assert_eq!(self.reply(&id).await, (ReplyKind::Answer, format!("echo: {text}")));
    }
}
