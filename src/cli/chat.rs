//! `passepartout chat`: an interactive conversation. When no daemon answers
//! on the socket, one is started in this process for the session.

use std::io::IsTerminal;
use std::process::ExitCode;

use passepartout_gateway::ReplyKind;
use passepartout_socket::{Client, ClientError, ServerFrame};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::Config;
use crate::daemon::Daemon;

use super::streamed::Streamed;
use super::terminal;

pub async fn run(config: Config, chat: Option<String>) -> ExitCode {
    let chat = match super::client::chat_id(chat) {
        Ok(chat) => chat,
        Err(code) => return code,
    };
    let (mut client, daemon) = match Client::connect(config.socket_path(), chat.clone()).await {
        Ok(client) => (client, None),
        Err(ClientError::NotRunning { .. }) => {
            eprintln!("(no daemon running; starting one in this process)");
            let daemon = match Daemon::start(config.clone()).await {
                Ok(daemon) => daemon,
                Err(error) => {
                    eprintln!("passepartout: cannot start the daemon: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match Client::connect(config.socket_path(), chat).await {
                Ok(client) => (client, Some(daemon)),
                Err(error) => {
                    eprintln!("passepartout: {error}");
                    let _ = daemon.shutdown().await;
                    return ExitCode::FAILURE;
                }
            }
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::from(3);
        }
    };
    eprintln!(
        "chatting in {:?}; /help for commands, Ctrl-D to leave",
        client.chat().as_str()
    );
    // With the daemon in this process, Ctrl-C stops it as `run` does, so
    // the store is flushed; otherwise it ends the chat as before.
    // Only then: a handler installed otherwise would swallow the Ctrl-C
    // that ends a plain client.
    let signal = daemon.as_ref().map(|_| super::shutdown_signal());
    let interrupted = async move {
        match signal {
            Some(signal) => signal.await,
            None => std::future::pending().await,
        }
    };
    let code = tokio::select! {
        code = converse(&mut client) => Some(code),
        () = interrupted => {
            eprintln!("(interrupted; stopping the daemon)");
            None
        }
    };
    if let Some(daemon) = daemon
        && let Err(error) = daemon.shutdown().await
    {
        eprintln!("passepartout: shutdown: {error}");
    }
    match code {
        Some(code) => code,
        None => {
            eprintln!("(daemon stopped)");
            // The daemon is down and its store flushed; stdin's read still
            // blocks a runtime thread, which would keep the process alive.
            std::process::exit(130)
        }
    }
}

async fn converse(client: &mut Client) -> ExitCode {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    // The newest approval prompt: a one-word answer typed next replies to it.
    let mut prompt: Option<String> = None;
    let mut streamed = Streamed::default();
    let mut out = std::io::stdout();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    let reply_to = if is_one_word_answer(&line) { prompt.take() } else { None };
                    if let Err(error) = client.send(None, &line, reply_to).await {
                        eprintln!("passepartout: {error}");
                        return ExitCode::from(3);
                    }
                }
                Ok(None) => return ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("passepartout: reading input: {error}");
                    return ExitCode::FAILURE;
                }
            },
            frame = client.next_event() => match frame {
                Ok(ServerFrame::Draft { text, restart, .. }) => streamed.draft(&mut out, &text, restart),
                Ok(ServerFrame::Reply { text, kind, drafted, .. }) => {
                    // Anything said after a prompt makes a bare "no" mean something else.
                    prompt = None;
                    if !streamed.finish(&mut out, Some((&text, drafted))) {
                        continue;
                    }
                    let shown = terminal::show(&text, out.is_terminal());
                    match kind {
                        ReplyKind::Failure => println!("! {shown}"),
                        _ => println!("{shown}"),
                    }
                }
                Ok(ServerFrame::Approval { id, text, .. }) => {
                    streamed.finish(&mut out, None);
                    println!("? {}", terminal::show(&text, out.is_terminal()));
                    prompt = Some(id);
                }
                Ok(ServerFrame::File { path, caption, .. }) => {
                    streamed.finish(&mut out, None);
                    println!("{}", super::client::file_line(&path, caption.as_deref()));
                }
                Ok(_) => {}
                Err(error) => {
                    eprintln!("passepartout: {error}");
                    return ExitCode::from(3);
                }
            },
        }
    }
}

/// "yes", "no", "approve", "always", "deny", "ok": what answers the prompt just shown.
fn is_one_word_answer(line: &str) -> bool {
    let word = line.trim().trim_end_matches(['.', '!']).to_lowercase();
    matches!(
        word.as_str(),
        "approve" | "approved" | "yes" | "y" | "ok" | "okay" | "always" | "deny" | "denied" | "no" | "n" | "reject"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_answers_reply_to_the_prompt_just_shown() {
        for line in ["yes", "Always", " always! ", "no", "deny.", "ok"] {
            assert!(is_one_word_answer(line), "{line:?}");
        }
        for line in ["always remember the milk", "sure", "", "alwayss"] {
            assert!(!is_one_word_answer(line), "{line:?}");
        }
    }
}
