//! `passepartout chat`: an interactive conversation. When no daemon answers
//! on the socket, one is started in this process for the session, logging
//! to the data directory ([`super::chat_log`]).
//!
//! At a terminal the chat has a prompt and streams replies rendered
//! ([`super::chat_terminal`]); with input or output redirected it reads
//! lines and prints replies as plain text, for scripts.
//!
//! Unless `--chat` names one, `chat` speaks in a conversation of its own,
//! apart from `send`'s, so a reply to a `send` from another terminal never
//! shows up in an open chat.

use std::io::IsTerminal;
use std::process::ExitCode;

use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, ClientError, ServerFrame};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::Config;
use crate::daemon::Daemon;

use super::markdown_stream::Surface;
use super::reconnect;
use super::streamed::Streamed;
use super::terminal;

/// `problems`: the configuration file did not load, and `config` holds only
/// its data directory and socket — enough to talk to a running daemon, not
/// to start one.
/// `file` is where it was read from: a daemon started here reads it again
/// on a reload, and names it in its hints.
pub async fn run(
    config: Config,
    problems: Option<crate::config::ConfigError>,
    file: Option<std::path::PathBuf>,
    chat: Option<String>,
) -> ExitCode {
    let log = super::chat_log::init(&config.data_dir());
    let chat = match super::client::chat_id(Some(chat.unwrap_or_else(default_chat))) {
        Ok(chat) => chat,
        Err(code) => return code,
    };
    let (mut client, daemon) = match connect_or_start(&config, problems, file, chat, &log).await {
        Ok(connected) => connected,
        Err(code) => return code,
    };
    eprintln!(
        "chatting in {:?}; /help for commands, Ctrl-D to leave",
        client.chat().as_str()
    );
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if terminal {
        // Ctrl-C is a key here (it stops the turn); a SIGINT or SIGTERM from
        // elsewhere ends the session, the terminal set back as it was.
        let history = config.data_dir().join("chat_history");
        let socket = config.socket_path();
        let code = super::chat_terminal::converse(&mut client, &socket, history, super::shutdown_signal()).await;
        stop(daemon).await;
        return code;
    }
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
    let socket = config.socket_path();
    let code = tokio::select! {
        code = converse(&mut client, &socket) => Some(code),
        () = interrupted => {
            eprintln!("(interrupted; stopping the daemon)");
            None
        }
    };
    stop(daemon).await;
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

/// A client in `chat` to the daemon on `config`'s socket; when none runs
/// (and `problems` do not keep one from starting), one started in this
/// process from `config` (read from `file`), logging to `log`, returned
/// too. The exit code when neither can be had.
async fn connect_or_start(
    config: &Config,
    problems: Option<crate::config::ConfigError>,
    file: Option<std::path::PathBuf>,
    chat: Option<ChatId>,
    log: &std::io::Result<std::path::PathBuf>,
) -> Result<(Client, Option<Daemon>), ExitCode> {
    match Client::connect(config.socket_path(), chat.clone()).await {
        Ok(client) => Ok((client, None)),
        Err(error @ ClientError::NotRunning { .. }) if problems.is_some() => {
            eprintln!("passepartout: {error}, and none can start here: the configuration has problems");
            if let Some(problems) = problems {
                eprintln!("passepartout: {problems}");
            }
            Err(ExitCode::from(2))
        }
        Err(ClientError::NotRunning { .. }) => {
            match log {
                Ok(path) => eprintln!(
                    "(no daemon running; starting one in this process, logging to {})",
                    path.display()
                ),
                Err(error) => eprintln!("(no daemon running; starting one in this process; no log: {error})"),
            }
            let extensions = crate::daemon::Extensions {
                config_file: file,
                ..Default::default()
            };
            let daemon = match Daemon::start_with(config.clone(), extensions).await {
                Ok(daemon) => daemon,
                Err(error) => {
                    eprintln!("passepartout: cannot start the daemon: {error}");
                    return Err(ExitCode::FAILURE);
                }
            };
            match Client::connect(config.socket_path(), chat).await {
                Ok(client) => Ok((client, Some(daemon))),
                Err(error) => {
                    eprintln!("passepartout: {error}");
                    let _ = daemon.shutdown().await;
                    Err(ExitCode::FAILURE)
                }
            }
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            Err(ExitCode::from(3))
        }
    }
}

/// Stops the `daemon` started for the session, if one was.
async fn stop(daemon: Option<Daemon>) {
    if let Some(daemon) = daemon
        && let Err(error) = daemon.shutdown().await
    {
        eprintln!("passepartout: shutdown: {error}");
    }
}

async fn converse(client: &mut Client, socket: &std::path::Path) -> ExitCode {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    // The newest approval prompt: a one-word answer typed next replies to it.
    let mut prompt: Option<String> = None;
    let mut streamed = Streamed::new(Surface::Plain);
    let mut out = std::io::stdout();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    let reply_to = if super::one_word::is_one_word_answer(&line) { prompt.take() } else { None };
                    match client.send(None, &line, reply_to).await {
                        Ok(_) => {}
                        Err(error) if error.is_too_large() => {
                            eprintln!("passepartout: {}", super::client::refusal_words(&error));
                        }
                        Err(error) if reconnect::is_gone(&error) => {
                            eprintln!("{}", reconnect::LOST);
                            if let Err(code) = back(client, socket).await {
                                return code;
                            }
                            eprintln!("(your last message may not have arrived: send it again if no answer comes)");
                        }
                        Err(error) => {
                            eprintln!("passepartout: {error}");
                            return ExitCode::from(3);
                        }
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
                Ok(ServerFrame::Stopped { text, .. }) => streamed.stopped(&mut out, &text),
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
                Err(error) if reconnect::is_gone(&error) => {
                    eprintln!("{}", reconnect::LOST);
                    prompt = None;
                    if let Err(code) = back(client, socket).await {
                        return code;
                    }
                }
                Err(error) => {
                    eprintln!("passepartout: {error}");
                    return ExitCode::from(3);
                }
            },
        }
    }
}

/// Connects `client` again to the daemon at `socket`, in the same
/// conversation, saying so; the exit code when the daemon does not come back.
async fn back(client: &mut Client, socket: &std::path::Path) -> Result<(), ExitCode> {
    match reconnect::connect_again(socket, client.chat()).await {
        Ok(again) => {
            *client = again;
            eprintln!("{}", reconnect::BACK);
            Ok(())
        }
        Err(error) => {
            eprintln!(
                "passepartout: the daemon did not come back within {} s: {error}",
                reconnect::GIVE_UP_AFTER.as_secs()
            );
            Err(ExitCode::from(3))
        }
    }
}

/// The conversation `chat` speaks in unless `--chat` names one: the
/// user's own, apart from `send`'s (`uid-<uid>`).
fn default_chat() -> String {
    format!("uid-{}-chat", rustix::process::getuid().as_raw())
}
