//! The one-shot client commands: `send`, `status`, `doctor`.

use std::process::ExitCode;
use std::time::Duration;

use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, ClientError, SendOutcome, ServerFrame};

use crate::config::Config;
use crate::doctor::{self, Level};

/// Exit code when the daemon cannot be reached.
const EXIT_UNREACHABLE: u8 = 3;

pub(super) fn chat_id(chat: Option<String>) -> Result<Option<ChatId>, ExitCode> {
    chat.map(ChatId::new).transpose().map_err(|error| {
        eprintln!("passepartout: {error}");
        ExitCode::from(2)
    })
}

async fn connect(config: &Config, chat: Option<ChatId>) -> Result<Client, ExitCode> {
    Client::connect(config.socket_path(), chat).await.map_err(|error| {
        match error {
            ClientError::NotRunning { .. } => eprintln!("passepartout: {error}. Start it with `passepartout run`."),
            _ => eprintln!("passepartout: cannot talk to the daemon: {error}"),
        }
        ExitCode::from(EXIT_UNREACHABLE)
    })
}

/// `passepartout send`: sends `text`, prints the reply. Exit 0 on an answer,
/// 1 when the turn failed (e.g. no model answered), 3 when the daemon is unreachable.
pub async fn send(config: &Config, chat: Option<String>, timeout_s: u64, text: String) -> ExitCode {
    let chat = match chat_id(chat) {
        Ok(chat) => chat,
        Err(code) => return code,
    };
    let mut client = match connect(config, chat).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let wait = async {
        let (id, outcome) = client.send(None, &text, None).await?;
        if outcome == SendOutcome::Duplicate {
            return Ok::<_, ClientError>(None);
        }
        loop {
            if let ServerFrame::Reply {
                in_reply_to: Some(answered),
                text,
                kind,
                ..
            } = client.next_event().await?
                && answered == id
            {
                return Ok(Some((kind, text)));
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(timeout_s), wait).await {
        Ok(Ok(Some((ReplyKind::Failure, text)))) => {
            eprintln!("{text}");
            ExitCode::FAILURE
        }
        Ok(Ok(Some((_, text)))) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Ok(None)) => {
            eprintln!("passepartout: the daemon had this message already");
            ExitCode::FAILURE
        }
        Ok(Err(error)) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
        Err(_) => {
            eprintln!(
                "passepartout: no reply within {timeout_s} s; it will still be answered (see `passepartout chat`)"
            );
            ExitCode::FAILURE
        }
    }
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
        print!("{}", render_status(&status));
    }
    ExitCode::SUCCESS
}

fn render_status(status: &serde_json::Value) -> String {
    let mut out = format!(
        "passepartout {} — up {} s\n",
        status["version"].as_str().unwrap_or("?"),
        status["uptime_s"]
    );
    for gateway in status["gateways"].as_array().into_iter().flatten() {
        out += &format!(
            "gateway  {:<10} {}\n",
            gateway["name"].as_str().unwrap_or("?"),
            gateway["state"].as_str().unwrap_or("?")
        );
    }
    for provider in status["providers"].as_array().into_iter().flatten() {
        let state = provider["last_error"]
            .as_str()
            .map(|e| format!("last error: {e}"))
            .unwrap_or_else(|| "ok".into());
        out += &format!(
            "model    {:<10} {} — {} calls, {} failed, {state}\n",
            provider["name"].as_str().unwrap_or("?"),
            provider["endpoint"].as_str().unwrap_or("?"),
            provider["calls"],
            provider["failures"]
        );
    }
    let conversations = &status["conversations"];
    out += &format!(
        "conversations  {} active, {} queued\n",
        conversations["active"], conversations["queued"]
    );
    let store = &status["store"];
    out += &format!(
        "store    {} bytes, {} pending, {} undelivered\n",
        store["size_bytes"], store["pending"], store["outbox"]
    );
    out
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
    let providers = match crate::daemon::providers(config) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_renders_every_part() {
        let status = serde_json::json!({
            "version": "0.1.0", "uptime_s": 3,
            "gateways": [{"name": "socket", "state": "up"}],
            "providers": [{"name": "local", "endpoint": "http://x/v1", "calls": 2, "failures": 1, "last_error": "timeout"}],
            "conversations": {"active": 1, "queued": 0},
            "store": {"size_bytes": 10, "pending": 0, "outbox": 0},
        });
        let text = render_status(&status);
        for part in ["socket", "local", "last error: timeout", "1 active", "10 bytes"] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }
}
