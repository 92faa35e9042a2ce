//! The one-shot client commands: `send`, `status`, `doctor`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use tokio::time::Instant;

use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{AdminRequest, Client, ClientError, SendOutcome, ServerFrame};

use crate::config::Config;
use crate::operator::doctor::{self, Level};

use super::streamed::Streamed;
use super::terminal;

/// Exit code when the daemon cannot be reached.
pub(super) const EXIT_UNREACHABLE: u8 = 3;

pub(super) fn chat_id(chat: Option<String>) -> Result<Option<ChatId>, ExitCode> {
    chat.map(ChatId::new).transpose().map_err(|error| {
        eprintln!("passepartout: {error}");
        ExitCode::from(2)
    })
}

pub(super) async fn connect(config: &Config, chat: Option<ChatId>) -> Result<Client, ExitCode> {
    Client::connect(config.socket_path(), chat).await.map_err(|error| {
        match error {
            ClientError::NotRunning { .. } => eprintln!("passepartout: {error}. Start it with `passepartout run`."),
            _ => eprintln!("passepartout: cannot talk to the daemon: {error}"),
        }
        ExitCode::from(EXIT_UNREACHABLE)
    })
}

/// How long `send` waits for a reply when not told: the turn's own bound
/// (`pipeline.turn_timeout_s`, 300 s by default) and some.
const DEFAULT_WAIT_S: u64 = 330;

/// Exit code when `--timeout-s` ran out first: the reply (or the decision
/// an approval waits for) is still to come.
pub(super) const EXIT_TIMED_OUT: u8 = 4;

/// Exit code when the message is larger than the daemon accepts.
pub(super) const EXIT_TOO_LARGE: u8 = 5;

/// What ended the wait for a reply.
enum Waited {
    /// The reply, its kind, and whether it was printed as it was written.
    Answered(ReplyKind, String, bool),
    /// The daemon had this message already.
    Duplicate,
    /// The turn was stopped (from another terminal or chat) before it answered.
    Stopped,
    /// The time ran out; the approval named was still open.
    TimedOut { open: Option<String> },
}

/// `passepartout send`: sends the message (`-`: standard input), prints the
/// reply (as it is written, with `stream`; and, on stderr, any approval
/// prompt it waits for meanwhile). With `timeout_s`, no wait is longer;
/// without it, a reply gets 330 s, and an approval as long as it stays open.
/// Exit 0 on an answer, 1 when the turn failed (e.g. no model answered), 2
/// when the message is empty, 3 when the daemon is unreachable, 4 when the
/// time ran out, 5 when the message is too large.
pub async fn send(
    config: &Config,
    chat: Option<String>,
    timeout_s: Option<u64>,
    stream: bool,
    words: &[String],
) -> ExitCode {
    let text = match message_text(words).await {
        Ok(text) => text,
        Err(code) => return code,
    };
    // An empty message gets no reply: refuse it rather than wait for one.
    if text.trim().is_empty() {
        eprintln!("passepartout: nothing to send: the message is empty");
        return ExitCode::from(2);
    }
    let chat = match chat_id(chat) {
        Ok(chat) => chat,
        Err(code) => return code,
    };
    let mut client = match connect(config, chat).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut waiting = Waiting::new(timeout_s);
    let waited = wait(
        &mut client,
        &text,
        stream,
        &mut waiting,
        config.approvals.expire_after_s,
    )
    .await;
    ended(waited, waiting.waited_s)
}

/// How long `send` waits, and for what.
struct Waiting {
    /// Told how long to wait: an approval does not lengthen it.
    bounded: bool,
    /// How long it waits, in seconds, as said when the time runs out.
    waited_s: u64,
    deadline: Instant,
    /// The approval the answer waits for.
    open: Option<String>,
}

impl Waiting {
    /// `timeout_s`, or the default wait for a reply.
    fn new(timeout_s: Option<u64>) -> Self {
        let waited_s = timeout_s.unwrap_or(DEFAULT_WAIT_S);
        Self {
            bounded: timeout_s.is_some(),
            waited_s,
            deadline: Instant::now() + Duration::from_secs(waited_s),
            open: None,
        }
    }

    /// The answer waits for approval `token`, asked with `text`: says how
    /// to give it and, unless told how long to wait, keeps waiting as long
    /// as the approval can (`approval_s`), then for the turn.
    fn approval(&mut self, text: &str, token: &str, approval_s: u64) {
        eprintln!("{}", terminal::show(text, std::io::stderr().is_terminal()));
        eprintln!("(from another terminal: passepartout approvals approve {token} — or deny)");
        self.open = Some(token.to_owned());
        let until = Instant::now() + Duration::from_secs(approval_s.saturating_add(DEFAULT_WAIT_S));
        if !self.bounded && until > self.deadline {
            self.deadline = until;
            self.waited_s = approval_s.saturating_add(DEFAULT_WAIT_S);
            eprintln!("(waiting up to {approval_s} s for the decision, as long as the approval stays open)");
        }
    }
}

/// Sends `text` through `client` and waits for what ends the wait: its
/// reply (printed as it is written, with `stream`), the turn stopped, or
/// the time of `waiting` run out; a file the answer sends is printed as it
/// comes, and an approval it waits for said (`approval_s`: how long one
/// stays open).
async fn wait(
    client: &mut Client,
    text: &str,
    stream: bool,
    waiting: &mut Waiting,
    approval_s: u64,
) -> Result<Waited, ClientError> {
    let mut streamed = Streamed::for_stdout();
    let mut out = std::io::stdout();
    let (id, outcome) = client.send(None, text, None).await?;
    if outcome == SendOutcome::Duplicate {
        return Ok(Waited::Duplicate);
    }
    loop {
        let Ok(event) = tokio::time::timeout_at(waiting.deadline, client.next_event()).await else {
            return Ok(Waited::TimedOut {
                open: waiting.open.take(),
            });
        };
        match event? {
            ServerFrame::Draft {
                in_reply_to: Some(answered),
                text,
                restart,
                ..
            } if stream && answered == id => streamed.draft(&mut out, &text, restart),
            ServerFrame::Reply {
                in_reply_to: Some(answered),
                text,
                kind,
                drafted,
                ..
            } if answered == id => {
                let shown = !streamed.finish(&mut out, Some((&text, drafted)));
                return Ok(Waited::Answered(kind, text, shown));
            }
            ServerFrame::Stopped {
                in_reply_to: Some(answered),
                text,
                ..
            } if answered == id => {
                if stream {
                    streamed.stopped(&mut out, &text);
                }
                return Ok(Waited::Stopped);
            }
            // A file the answer sends comes before the answer's text.
            ServerFrame::File {
                in_reply_to: Some(answered),
                path,
                caption,
                ..
            } if answered == id => println!("{}", file_line(&path, caption.as_deref())),
            ServerFrame::Approval {
                in_reply_to: Some(answered),
                token,
                text,
                ..
            } if answered == id => waiting.approval(&text, token.as_str(), approval_s),
            _ => {}
        }
    }
}

/// What `send` says of how the wait ended, and its exit code; `waited_s`:
/// how long it waited.
fn ended(waited: Result<Waited, ClientError>, waited_s: u64) -> ExitCode {
    match waited {
        Ok(Waited::Answered(ReplyKind::Failure, text, _)) => {
            eprintln!("{}", terminal::show(&text, std::io::stderr().is_terminal()));
            ExitCode::FAILURE
        }
        // Printed as it was written.
        Ok(Waited::Answered(_, _, true)) => ExitCode::SUCCESS,
        Ok(Waited::Answered(_, text, false)) => {
            println!("{}", terminal::show(&text, std::io::stdout().is_terminal()));
            ExitCode::SUCCESS
        }
        Ok(Waited::Stopped) => {
            eprintln!("passepartout: the turn was stopped before it answered");
            ExitCode::FAILURE
        }
        Ok(Waited::Duplicate) => {
            eprintln!("passepartout: the daemon had this message already");
            ExitCode::FAILURE
        }
        Ok(Waited::TimedOut { open: Some(token) }) => {
            eprintln!(
                "passepartout: no decision within {waited_s} s; approval {token} is still open \
                 (passepartout approvals approve {token}, or deny), and the reply comes once it is decided"
            );
            ExitCode::from(EXIT_TIMED_OUT)
        }
        Ok(Waited::TimedOut { open: None }) => {
            eprintln!(
                "passepartout: no reply within {waited_s} s; it will still be answered (see `passepartout chat`)"
            );
            ExitCode::from(EXIT_TIMED_OUT)
        }
        Err(error) if error.is_too_large() => {
            eprintln!("passepartout: {}", refusal_words(&error));
            ExitCode::from(EXIT_TOO_LARGE)
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}

/// The refusal of an oversized message as the daemon or the client worded
/// it (without the "the daemon refused" frame around it).
pub(super) fn refusal_words(error: &ClientError) -> String {
    match error {
        ClientError::Refused { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The message `send` was given: its words joined, or, for `-` alone,
/// standard input (one final newline dropped).
async fn message_text(words: &[String]) -> Result<String, ExitCode> {
    if words != ["-"] {
        return Ok(words.join(" "));
    }
    let mut bytes = Vec::new();
    if let Err(error) = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut bytes).await {
        eprintln!("passepartout: reading the message from standard input: {error}");
        return Err(ExitCode::from(2));
    }
    let mut text = String::from_utf8(bytes).map_err(|_| {
        eprintln!("passepartout: the message on standard input is not UTF-8 text");
        ExitCode::from(2)
    })?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// How `chat` and `send` show a file the assistant sent: where it is, and
/// its caption.
pub(super) fn file_line(path: &str, caption: Option<&str>) -> String {
    let path = terminal::inert(path);
    match caption {
        Some(caption) => format!("[file] {path} — {}", terminal::inert(caption)),
        None => format!("[file] {path}"),
    }
}

/// A listing the daemon sent, or how the command ends: 3 when the daemon
/// could not be asked, 1 when it answered with an error.
pub(super) fn listing(reply: Result<serde_json::Value, ClientError>) -> Result<serde_json::Value, ExitCode> {
    let listing = reply.map_err(|error| {
        eprintln!("passepartout: {error}");
        ExitCode::from(EXIT_UNREACHABLE)
    })?;
    if let Some(error) = listing["error"].as_str() {
        eprintln!("passepartout: {error}");
        return Err(ExitCode::FAILURE);
    }
    Ok(listing)
}

/// `passepartout status`.
pub async fn status(config: &Config, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let status: serde_json::Value = match client.ask(AdminRequest::Status).await {
        Ok(status) => status,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::from(EXIT_UNREACHABLE);
        }
    };
    if json {
        println!("{status}");
    } else {
        print!("{}", crate::operator::status::render(&status));
    }
    ExitCode::SUCCESS
}

/// `passepartout doctor`: exit 1 when any check failed. With `problems`,
/// the file did not load: that is the config's line, and only what can be
/// checked without it follows (the running daemon, the store).
pub async fn doctor(
    config: &Config,
    file: Option<std::path::PathBuf>,
    problems: Option<crate::config::ConfigError>,
) -> ExitCode {
    let shown = file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults".into());
    if let Some(problems) = problems {
        let fix = format!("passepartout check-config {shown}");
        println!(
            "{}",
            doctor::Check::new("config", Level::Failed, format!("{shown}: {problems}"), Some(fix))
        );
        for check in doctor::run_salvaged(config).await {
            println!("{check}");
        }
        return ExitCode::FAILURE;
    }
    println!(
        "{}",
        doctor::Check {
            part: "config".into(),
            level: Level::Ok,
            detail: shown,
            fix: None
        }
    );
    let providers = match crate::model::llm::providers(config) {
        Ok(providers) => providers,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::FAILURE;
        }
    };
    let checks = doctor::run(config, file.as_deref(), &providers).await;
    for check in &checks {
        println!("{check}");
    }
    if checks.iter().any(|c| c.level == Level::Failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
