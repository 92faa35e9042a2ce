//! `chat` at a terminal: a prompt with line editing and history, and the
//! reply streamed in below it, rendered as it is written.
//!
//! The session alternates between two states. At the prompt, the line
//! editor owns the keyboard and whatever the assistant says meanwhile is
//! printed above the prompt. During a turn — from sending a message until
//! its reply (or an approval prompt) — the reply streams in, and the keys
//! are read quietly ([`super::turn_keys`]): Ctrl-C sends `/stop` for the
//! conversation and marks the partial reply ` [stopped]`; a second Ctrl-C
//! leaves; anything else typed becomes the next prompt's input. Messages
//! for the chat that answer something else wait until the turn is over,
//! so nothing mixes into the reply.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitCode;

use passepartout_gateway::ReplyKind;
use passepartout_socket::{Client, ClientError, ServerFrame};

use super::line_editor::{Input, LineEditor, PROMPT};
use super::reconnect;
use super::streamed::Streamed;
use super::terminal;
use super::turn_keys::{Keys, Quiet, TypeAhead};

/// Said when a Ctrl-C at the prompt did not leave yet.
const LEAVE_HINT: &str = "(Ctrl-C again or Ctrl-D to leave)";

/// How a turn ended.
enum TurnEnd {
    /// Its reply came: back to the prompt.
    Answered,
    /// The person pressed Ctrl-C again: leave.
    Leave,
    /// The connection to the daemon failed.
    Lost(ClientError),
}

/// The interactive session, until the person leaves or `leave` resolves
/// (the in-process daemon was told to stop).
pub(super) async fn converse(
    client: &mut Client,
    socket: &Path,
    history: PathBuf,
    leave: impl Future<Output = ()>,
) -> ExitCode {
    let quiet = match Quiet::enter() {
        Ok(quiet) => quiet,
        Err(error) => {
            eprintln!("passepartout: cannot set up the terminal: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut editor = match LineEditor::start(history) {
        Ok(editor) => editor,
        Err(error) => {
            drop(quiet);
            eprintln!("passepartout: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut session = Session {
        client,
        typed: TypeAhead::default(),
        approval: None,
    };
    tokio::pin!(leave);
    // The last thing the person did was Ctrl-C: another one leaves.
    let mut interrupted = false;
    let code = loop {
        let input = match session.input(&mut editor, socket, leave.as_mut()).await {
            Next::Go(input) => input,
            Next::Prompt => continue,
            Next::Leave(code) => break code,
        };
        let text = match input {
            Input::End => break ExitCode::SUCCESS,
            Input::Interrupted if interrupted => break ExitCode::SUCCESS,
            Input::Interrupted => {
                interrupted = true;
                editor.print(&terminal::remark(LEAVE_HINT, true));
                continue;
            }
            Input::Line(text) if text.trim().is_empty() => continue,
            Input::Line(text) => text,
        };
        interrupted = false;
        let reply_to = if super::one_word::is_one_word_answer(&text) {
            session.approval.take()
        } else {
            None
        };
        let id = match session.send(&mut editor, socket, &text, reply_to).await {
            Next::Go(id) => id,
            Next::Prompt => continue,
            Next::Leave(code) => break code,
        };
        tokio::select! {
            end = session.turn(&id, &mut interrupted) => match end {
                TurnEnd::Answered => {}
                TurnEnd::Leave => break ExitCode::SUCCESS,
                TurnEnd::Lost(error) if reconnect::is_gone(&error) => {
                    if let Err(code) = session.back(socket, &mut editor).await {
                        break code;
                    }
                }
                TurnEnd::Lost(error) => {
                    eprintln!("passepartout: {error}");
                    break ExitCode::from(super::client::EXIT_UNREACHABLE);
                }
            },
            () = &mut leave => break ExitCode::from(130),
        }
    };
    session.typed.clear();
    drop(quiet);
    code
}

/// What the session does next.
enum Next<T> {
    /// Goes on with this.
    Go(T),
    /// Back to the prompt.
    Prompt,
    /// Leaves, with this exit code.
    Leave(ExitCode),
}

struct Session<'a> {
    client: &'a mut Client,
    typed: TypeAhead,
    /// The newest approval prompt: a one-word answer typed next replies to it.
    approval: Option<String>,
}

impl Session<'_> {
    /// The next input: a line typed while the reply streamed, else what is
    /// read at the prompt, while whatever the assistant says meanwhile is
    /// shown above it. Leaves when `leave` resolves or the daemon is
    /// gone for good; back to the prompt once it is back.
    async fn input(
        &mut self,
        editor: &mut LineEditor,
        socket: &Path,
        mut leave: Pin<&mut impl Future<Output = ()>>,
    ) -> Next<Input> {
        if let Some(line) = self.typed.next_line() {
            // Typed while the reply streamed: shown as if at the prompt.
            println!("{PROMPT}{line}");
            let _ = std::io::stdout().flush();
            return Next::Go(Input::Line(line));
        }
        let read = editor.read(self.typed.take_begun());
        tokio::pin!(read);
        let mut lost = false;
        let read = loop {
            tokio::select! {
                input = &mut read => break input.map(Some).map_err(|error| error.to_string()),
                frame = self.client.next_event() => match frame {
                    Ok(frame) => self.between_turns(editor, frame),
                    Err(error) if reconnect::is_gone(&error) => {
                        lost = true;
                        break Ok(None);
                    }
                    Err(error) => break Err(error.to_string()),
                },
                () = &mut leave => break Ok(None),
            }
        };
        if lost {
            return match self.back(socket, editor).await {
                Ok(()) => Next::Prompt,
                Err(code) => Next::Leave(code),
            };
        }
        match read {
            Ok(Some(input)) => Next::Go(input),
            Ok(None) => Next::Leave(ExitCode::from(130)),
            Err(error) => {
                eprintln!("passepartout: {error}");
                Next::Leave(ExitCode::from(super::client::EXIT_UNREACHABLE))
            }
        }
    }

    /// Sends `text` (replying to `reply_to`); its message id. A message
    /// too large is refused at the prompt; a lost connection is made again,
    /// saying the message may not have arrived.
    async fn send(
        &mut self,
        editor: &mut LineEditor,
        socket: &Path,
        text: &str,
        reply_to: Option<String>,
    ) -> Next<String> {
        match self.client.send(None, text, reply_to).await {
            Ok((id, _)) => Next::Go(id),
            // Nothing was taken; the chat goes on.
            Err(error) if error.is_too_large() => {
                editor.print(&terminal::remark(&super::client::refusal_words(&error), true));
                Next::Prompt
            }
            Err(error) if reconnect::is_gone(&error) => match self.back(socket, editor).await {
                Ok(()) => {
                    editor.print(&terminal::remark(
                        "(your message may not have arrived: send it again if no answer comes)",
                        true,
                    ));
                    Next::Prompt
                }
                Err(code) => Next::Leave(code),
            },
            Err(error) => {
                eprintln!("passepartout: {error}");
                Next::Leave(ExitCode::from(super::client::EXIT_UNREACHABLE))
            }
        }
    }

    /// Connects again to the daemon at `socket` in the same conversation,
    /// saying so above the prompt; the line history stays the editor's.
    /// The exit code when the daemon does not come back.
    async fn back(&mut self, socket: &Path, editor: &mut LineEditor) -> Result<(), ExitCode> {
        editor.print(&terminal::remark(reconnect::LOST, true));
        match reconnect::connect_again(socket, self.client.chat()).await {
            Ok(again) => {
                *self.client = again;
                // A prompt from before is answered in its own words, not by a bare "yes".
                self.approval = None;
                editor.print(&terminal::remark(reconnect::BACK, true));
                Ok(())
            }
            Err(error) => {
                eprintln!(
                    "passepartout: the daemon did not come back within {} s: {error}",
                    reconnect::GIVE_UP_AFTER.as_secs()
                );
                Err(ExitCode::from(super::client::EXIT_UNREACHABLE))
            }
        }
    }

    /// Shows `frame`, come while the prompt is shown, above it. Drafts are
    /// not: the reply they become is printed whole.
    fn between_turns(&mut self, editor: &mut LineEditor, frame: ServerFrame) {
        if let Some(shown) = self.shown(frame) {
            editor.print(&shown);
        }
    }

    /// A finished message as printed, noting an approval prompt.
    fn shown(&mut self, frame: ServerFrame) -> Option<String> {
        match frame {
            ServerFrame::Reply { text, kind, .. } => {
                // Anything said after a prompt makes a bare "no" mean something else.
                self.approval = None;
                Some(shown_reply(&text, kind))
            }
            ServerFrame::Approval { id, text, .. } => {
                self.approval = Some(id);
                Some(format!("? {}", terminal::show(&text, true)))
            }
            ServerFrame::File { path, caption, .. } => Some(super::client::file_line(&path, caption.as_deref())),
            _ => None,
        }
    }

    /// Streams the reply to message `id`, until it is complete.
    async fn turn(&mut self, id: &str, interrupted: &mut bool) -> TurnEnd {
        let mut keys = Keys::open().map_err(|error| tracing::warn!(%error, "keys not read during the reply"));
        let mut out = std::io::stdout();
        let mut streamed = Streamed::for_stdout();
        // The `/stop` sent for this turn, and whether the reply was marked stopped.
        let mut stop: Option<String> = None;
        let mut marked = false;
        // Messages answering something else, printed after the reply.
        let mut later: Vec<String> = Vec::new();
        let end = loop {
            let key = async {
                match &mut keys {
                    Ok(keys) => keys.read().await,
                    Err(()) => std::future::pending().await,
                }
            };
            tokio::select! {
                typed = key => {
                    let Ok(typed) = typed else { continue };
                    let interrupts = self.typed.feed(&typed);
                    if interrupts == 0 {
                        continue;
                    }
                    if stop.is_some() || interrupts > 1 {
                        streamed.end(&mut out, Some(" [stopped]"));
                        break TurnEnd::Leave;
                    }
                    *interrupted = true;
                    match self.client.send(None, "/stop", None).await {
                        Ok((stop_id, _)) => stop = Some(stop_id),
                        Err(error) => break TurnEnd::Lost(error),
                    }
                }
                frame = self.client.next_event() => {
                    let frame = match frame {
                        Ok(frame) => frame,
                        Err(error) => break TurnEnd::Lost(error),
                    };
                    let ours = |answered: &Option<String>| answered.as_deref().is_none_or(|a| a == id);
                    match frame {
                        ServerFrame::Draft { in_reply_to, text, restart, .. } if ours(&in_reply_to) => {
                            // A stopped turn's draft withdrawn: the partial reply stays, marked.
                            if stop.is_some() && restart && text.is_empty() {
                                marked |= streamed.end(&mut out, Some(" [stopped]"));
                            } else {
                                streamed.draft(&mut out, &text, restart);
                            }
                        }
                        // The turn was stopped: what it showed stays, marked. After
                        // our own `/stop`, its answer still ends the turn.
                        ServerFrame::Stopped { in_reply_to, text, .. } if ours(&in_reply_to) => {
                            streamed.stopped(&mut out, &text);
                            marked = true;
                            if stop.is_none() {
                                break TurnEnd::Answered;
                            }
                        }
                        ServerFrame::Reply { in_reply_to: Some(answered), text, kind, drafted, .. } if answered == id => {
                            self.approval = None;
                            if streamed.finish(&mut out, Some((&text, drafted))) {
                                println!("{}", shown_reply(&text, kind));
                            }
                            break TurnEnd::Answered;
                        }
                        ServerFrame::Reply { in_reply_to: Some(answered), text, kind, .. }
                            if stop.as_deref() == Some(answered.as_str()) =>
                        {
                            // The partial reply marked stopped says it in one line.
                            marked |= streamed.end(&mut out, Some(" [stopped]"));
                            if !marked {
                                println!("{}", shown_reply(&text, kind));
                            }
                            break TurnEnd::Answered;
                        }
                        frame @ (ServerFrame::Approval { .. } | ServerFrame::File { .. })
                            if ours(frame_answers(&frame)) =>
                        {
                            streamed.finish(&mut out, None);
                            let asks = matches!(frame, ServerFrame::Approval { .. });
                            if let Some(shown) = self.shown(frame) {
                                println!("{shown}");
                            }
                            if asks {
                                // The answer is typed at the prompt.
                                break TurnEnd::Answered;
                            }
                        }
                        ServerFrame::Draft { .. } => {}
                        frame => later.extend(self.shown(frame)),
                    }
                    let _ = out.flush();
                }
            }
        };
        for shown in later {
            println!("{shown}");
        }
        let _ = out.flush();
        end
    }
}

fn frame_answers(frame: &ServerFrame) -> &Option<String> {
    match frame {
        ServerFrame::Approval { in_reply_to, .. } | ServerFrame::File { in_reply_to, .. } => in_reply_to,
        _ => &None,
    }
}

/// A finished reply as the terminal shows it.
fn shown_reply(text: &str, kind: ReplyKind) -> String {
    match kind {
        ReplyKind::Failure => format!("! {}", terminal::show(text, true)),
        _ => terminal::show(text, true),
    }
}
