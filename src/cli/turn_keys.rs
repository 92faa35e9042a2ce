//! The keyboard while a reply streams: nothing typed is echoed into the
//! reply, Ctrl-C is a key the chat reads (to stop the turn) rather than a
//! signal, and what is typed meanwhile is kept to become the next prompt's
//! input.
//!
//! For the whole session the terminal is kept quiet — no echo, no line
//! discipline, no signals from keys — and set back as it was when the
//! session ends ([`Quiet`]). The line editor switches to its own raw mode
//! while the prompt is shown and back to this one after. During a turn the
//! terminal is read through a descriptor of its own, opened non-blocking
//! ([`Keys`]), so the read can wait in a `select!` and the editor's blocking
//! reads on standard input are left alone.

use std::collections::VecDeque;
use std::io;

use rustix::fs::{Mode, OFlags};
use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr, ttyname};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// The terminal kept quiet for the session; dropping it sets the terminal
/// back as it was.
pub(super) struct Quiet {
    original: Termios,
}

impl Quiet {
    pub(super) fn enter() -> io::Result<Quiet> {
        let stdin = io::stdin();
        let original = tcgetattr(&stdin)?;
        let mut quiet = original.clone();
        quiet
            .local_modes
            .remove(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG);
        quiet.special_codes[SpecialCodeIndex::VMIN] = 1;
        quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
        Ok(Quiet { original })
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        let _ = tcsetattr(io::stdin(), OptionalActions::Now, &self.original);
    }
}

/// The terminal's keys, read without blocking.
pub(super) struct Keys {
    /// Tokio's pipe reader reads any pollable non-blocking descriptor; a
    /// terminal is one.
    tty: pipe::Receiver,
}

impl Keys {
    /// Opens standard input's terminal again: a descriptor of its own, so
    /// making it non-blocking leaves standard input as it is.
    pub(super) fn open() -> io::Result<Keys> {
        let name = ttyname(io::stdin(), Vec::new())?;
        let fd = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Keys {
            tty: pipe::Receiver::from_owned_fd_unchecked(fd)?,
        })
    }

    /// The bytes typed next.
    pub(super) async fn read(&mut self) -> io::Result<Vec<u8>> {
        let mut buffer = [0u8; 256];
        match self.tty.read(&mut buffer).await? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => Ok(buffer[..n].to_vec()),
        }
    }
}

/// What was typed while a reply streamed: whole lines (Enter pressed), to
/// be sent in turn, and the line begun, to be the next prompt's input.
/// Ctrl-C is counted, not kept; other control keys and escape sequences
/// (arrows) are dropped, as they cannot be replayed into a prompt.
#[derive(Debug, Default)]
pub(super) struct TypeAhead {
    lines: VecDeque<String>,
    line: Vec<u8>,
    escape: Escape,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Started,
    /// Inside `ESC [` or `ESC O`, until the final byte.
    Sequence,
}

const CTRL_C: u8 = 0x03;
const CTRL_U: u8 = 0x15;
const ESC: u8 = 0x1b;
const BACKSPACE: [u8; 2] = [0x7f, 0x08];

impl TypeAhead {
    /// Takes in `bytes` typed; returns how many were Ctrl-C.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> usize {
        let mut interrupts = 0;
        for &byte in bytes {
            match (self.escape, byte) {
                (Escape::Started, b'[' | b'O') => self.escape = Escape::Sequence,
                (Escape::Started, _) => self.escape = Escape::None,
                (Escape::Sequence, 0x40..=0x7e) => self.escape = Escape::None,
                (Escape::Sequence, _) => {}
                (Escape::None, ESC) => self.escape = Escape::Started,
                (Escape::None, CTRL_C) => interrupts += 1,
                (Escape::None, CTRL_U) => self.line.clear(),
                (Escape::None, b'\r' | b'\n') => {
                    let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
                    self.lines.push_back(line);
                }
                (Escape::None, byte) if BACKSPACE.contains(&byte) => {
                    // The last character, however many bytes it took.
                    while self.line.pop().is_some_and(|b| b & 0xc0 == 0x80) {}
                }
                (Escape::None, 0x00..=0x1f) => {}
                (Escape::None, byte) => self.line.push(byte),
            }
        }
        interrupts
    }

    /// The next whole line typed, if any.
    pub(super) fn next_line(&mut self) -> Option<String> {
        self.lines.pop_front()
    }

    /// The line begun, taken.
    pub(super) fn take_begun(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned()
    }

    /// Forgets everything typed (when the person leaves).
    pub(super) fn clear(&mut self) {
        *self = TypeAhead::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_and_the_line_begun_are_kept_for_the_prompt() {
        let mut typed = TypeAhead::default();
        assert_eq!(typed.feed("next one\rand thé".as_bytes()), 0);
        assert_eq!(typed.feed(&[0x7f, 0x7f]), 0, "backspace takes whole characters");
        assert_eq!(typed.feed(b"e"), 0);
        assert_eq!(typed.next_line().as_deref(), Some("next one"));
        assert_eq!(typed.next_line(), None);
        assert_eq!(typed.take_begun(), "and te");
        assert_eq!(typed.take_begun(), "");
    }

    #[test]
    fn ctrl_c_is_counted_and_arrows_are_dropped() {
        let mut typed = TypeAhead::default();
        assert_eq!(typed.feed(b"a\x1b[A\x1bOBb\x03"), 1);
        assert_eq!(typed.feed(b"\x1b["), 0);
        assert_eq!(typed.feed(b"1;5Cc\x03\x03"), 2, "a sequence split across reads");
        assert_eq!(typed.take_begun(), "abc");
        typed.feed(b"gone\x15kept");
        assert_eq!(typed.take_begun(), "kept");
    }
}
