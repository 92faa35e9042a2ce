//! The one-shot client commands: `send`, `status`, `doctor`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use tokio::time::Instant;

use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, ClientError, SendOutcome, ServerFrame};

use crate::config::Config;
use crate::doctor::{self, Level};

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

/// `passepartout send`: sends `text`, prints the reply (as it is written,
/// with `stream`; and, on stderr, any approval prompt it waits for
/// meanwhile). Exit 0 on an answer,
/// 1 when the turn failed (e.g. no model answered), 2 when the message is
/// empty, 3 when the daemon is unreachable.
pub async fn send(config: &Config, chat: Option<String>, timeout_s: u64, stream: bool, text: String) -> ExitCode {
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
    let mut waited_s = timeout_s;
    let mut deadline = Instant::now() + Duration::from_secs(timeout_s);
    let mut streamed = Streamed::default();
    let mut out = std::io::stdout();
    let wait = async {
        let (id, outcome) = client.send(None, &text, None).await?;
        if outcome == SendOutcome::Duplicate {
            return Ok::<_, ClientError>(Some(None));
        }
        loop {
            let Ok(event) = tokio::time::timeout_at(deadline, client.next_event()).await else {
                return Ok(None);
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
                    return Ok(Some(Some((kind, text, shown))));
                }
                // A file the answer sends comes before the answer's text.
                ServerFrame::File {
                    in_reply_to: Some(answered),
                    path,
                    caption,
                    ..
                } if answered == id => println!("{}", file_line(&path, caption.as_deref())),
                // The answer waits for a person: say how to give it, and keep
                // waiting as long as the approval can, then for the turn.
                ServerFrame::Approval {
                    in_reply_to: Some(answered),
                    token,
                    text,
                    ..
                } if answered == id => {
                    eprintln!("{}", terminal::show(&text, std::io::stderr().is_terminal()));
                    eprintln!(
                        "(from another terminal: passepartout approvals approve {} — or deny)",
                        token.as_str()
                    );
                    let approval_s = config.approvals.expire_after_s;
                    let until = Instant::now() + Duration::from_secs(approval_s.saturating_add(timeout_s));
                    if until > deadline {
                        deadline = until;
                        waited_s = approval_s.saturating_add(timeout_s);
                        eprintln!(
                            "(waiting up to {approval_s} s for the decision, as long as the approval stays open)"
                        );
                    }
                }
                _ => {}
            }
        }
    };
    let outcome = wait.await;
    match outcome {
        Ok(Some(Some((ReplyKind::Failure, text, _)))) => {
            eprintln!("{}", terminal::show(&text, std::io::stderr().is_terminal()));
            ExitCode::FAILURE
        }
        // Printed as it was written.
        Ok(Some(Some((_, _, true)))) => ExitCode::SUCCESS,
        Ok(Some(Some((_, text, false)))) => {
            println!("{}", terminal::show(&text, std::io::stdout().is_terminal()));
            ExitCode::SUCCESS
        }
        Ok(Some(None)) => {
            eprintln!("passepartout: the daemon had this message already");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
        Ok(None) => {
            eprintln!(
                "passepartout: no reply within {waited_s} s; it will still be answered (see `passepartout chat`)"
            );
            ExitCode::FAILURE
        }
    }
}

/// How `chat` and `send` show a file the assistant sent: where it is, and
/// its caption.
pub(super) fn file_line(path: &str, caption: Option<&str>) -> String {
    match caption {
        Some(caption) => format!("[file] {path} — {caption}"),
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
    let status = match client.status().await {
        Ok(status) => status,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::from(EXIT_UNREACHABLE);
        }
    };
    if json {
        println!("{status}");
    } else {
        print!("{}", crate::status::render(&status));
    }
    ExitCode::SUCCESS
}

/// `passepartout doctor`: exit 1 when any check failed.
pub async fn doctor(config: &Config, file: Option<std::path::PathBuf>) -> ExitCode {
    let shown = file
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults".into());
    println!(
        "{}",
        doctor::Check {
            part: "config".into(),
            level: Level::Ok,
            detail: shown,
            fix: None
        }
    );
    let providers = match crate::llm::providers(config) {
        Ok(providers) => providers,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::FAILURE;
        }
    };
    let checks = doctor::run(config, &providers).await;
    for check in &checks {
        println!("{check}");
    }
    if checks.iter().any(|c| c.level == Level::Failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
