//! `chat`'s prompt: a rustyline editor (line editing, history, multi-line
//! input) on a thread of its own, since reading a line blocks.
//!
//! The history is kept in the data directory, one file for every chat, and
//! written after each line, so a session that ends abruptly keeps it. A
//! line ending in `\`, an open code fence, or Alt-Enter goes on to a next
//! line; Enter sends the whole. While a line is being read, what the
//! assistant says meanwhile is printed above the prompt
//! ([`LineEditor::print`]), so the two never mix.

use std::path::PathBuf;
use std::sync::mpsc;

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Config, Editor, ExternalPrinter, Helper, KeyCode, KeyEvent, Modifiers};
use thiserror::Error;
use tokio::sync::oneshot;

/// The prompt shown before what the person types.
pub(super) const PROMPT: &str = "› ";

/// The most lines the history keeps.
const HISTORY_LINES: usize = 1000;

/// What the person did at the prompt.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Input {
    /// A message (lines joined with newlines).
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D on an empty line.
    End,
}

/// Why the prompt could not be used.
#[derive(Debug, Error)]
pub(super) enum EditorError {
    #[error("cannot set up line editing: {0}")]
    Setup(#[source] ReadlineError),
    #[error("reading input: {0}")]
    Read(#[source] ReadlineError),
    #[error("the line editor stopped")]
    Gone,
}

type Request = (String, oneshot::Sender<Result<Input, EditorError>>);

/// The editor's thread, and a way to print above its prompt.
pub(super) struct LineEditor {
    requests: mpsc::Sender<Request>,
    printer: Box<dyn ExternalPrinter + Send>,
}

impl LineEditor {
    /// Starts the editor with the history in `history` (created if missing).
    pub(super) fn start(history: PathBuf) -> Result<LineEditor, EditorError> {
        let config = Config::builder()
            .auto_add_history(false)
            .history_ignore_dups(true)
            .and_then(|config| config.max_history_size(HISTORY_LINES))
            .map_err(EditorError::Setup)?
            .build();
        let mut editor: Editor<Continues, FileHistory> = Editor::with_config(config).map_err(EditorError::Setup)?;
        editor.set_helper(Some(Continues));
        editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
        match editor.load_history(&history) {
            Ok(()) => {}
            Err(ReadlineError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {}
            // A history that cannot be read is not worth refusing to chat over.
            Err(error) => tracing::warn!(%error, path = %history.display(), "chat history not read"),
        }
        let printer = Box::new(editor.create_external_printer().map_err(EditorError::Setup)?);
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("chat-prompt".into())
            .spawn(move || {
                for (initial, answer) in incoming {
                    let _ = answer.send(read(&mut editor, &history, &initial));
                }
            })
            .map_err(|error| EditorError::Setup(ReadlineError::Io(error)))?;
        Ok(LineEditor { requests, printer })
    }

    /// Shows the prompt, with `initial` typed already, and waits for the
    /// person's input.
    /// The future holds no borrow of the editor, so lines can be printed
    /// above the prompt while it waits.
    pub(super) fn read(&self, initial: String) -> impl Future<Output = Result<Input, EditorError>> + use<> {
        let (answer, input) = oneshot::channel();
        let asked = self.requests.send((initial, answer));
        async move {
            asked.map_err(|_| EditorError::Gone)?;
            input.await.map_err(|_| EditorError::Gone)?
        }
    }

    /// Prints `text` (a whole line or more) above the prompt, or where the
    /// cursor is when no prompt is shown.
    pub(super) fn print(&mut self, text: &str) {
        let text = if text.ends_with('\n') {
            text.to_owned()
        } else {
            format!("{text}\n")
        };
        if let Err(error) = self.printer.print(text) {
            tracing::warn!(%error, "cannot print above the prompt");
        }
    }
}

fn read(editor: &mut Editor<Continues, FileHistory>, history: &PathBuf, initial: &str) -> Result<Input, EditorError> {
    match editor.readline_with_initial(PROMPT, (initial, "")) {
        Ok(line) => {
            let line = joined(&line);
            if !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
                if let Err(error) = editor.append_history(history) {
                    tracing::warn!(%error, path = %history.display(), "chat history not saved");
                }
            }
            Ok(Input::Line(line))
        }
        Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
        Err(ReadlineError::Eof) => Ok(Input::End),
        Err(error) => Err(EditorError::Read(error)),
    }
}

/// The lines of a message as sent: a `\` that carried a line on to the
/// next is not part of it.
fn joined(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// Whether Enter ends the message or goes on to a next line.
struct Continues;

impl Helper for Continues {}
impl Highlighter for Continues {}

impl Completer for Continues {
    type Candidate = String;
}

impl Hinter for Continues {
    type Hint = String;
}

impl Validator for Continues {
    fn validate(&self, context: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if goes_on(context.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

/// A message goes on past Enter when its last line ends in `\` or a code
/// fence is still open.
fn goes_on(input: &str) -> bool {
    let fences = input
        .lines()
        .filter(|line| line.trim_start().starts_with("```"))
        .count();
    input.ends_with('\\') || fences % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_or_an_open_fence_carries_the_message_on() {
        assert!(goes_on("first line \\"));
        assert!(goes_on("look:\n```rust\nfn main() {}"));
        assert!(!goes_on("look:\n```\nls\n```"));
        assert!(!goes_on("a plain line"));
        assert_eq!(joined("one \\\ntwo"), "one \ntwo");
    }
}
