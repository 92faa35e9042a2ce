//! The terminal the wizard asks on: a line typed (echoed), or a secret typed
//! with echo off. Echo is switched off *before* the prompt is shown, so
//! nothing typed after the prompt can appear; it is switched back on when the
//! line is read, or by [`Terminal::restore`] when the wizard is interrupted
//! while a secret is being typed.
//!
//! Reading blocks, so it runs on tokio's blocking pool, and the wizard can be
//! interrupted (Ctrl-C) while it waits.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::termios::{self, LocalModes, OptionalActions, Termios};

/// Standard input and output, when standard input is a terminal.
#[derive(Clone)]
pub struct Terminal {
    /// The terminal's settings from before echo was switched off, while it is.
    saved: Arc<Mutex<Option<Termios>>>,
}

impl Terminal {
    /// The terminal, if standard input is one.
    pub fn open() -> Option<Self> {
        std::io::stdin().is_terminal().then(|| Self {
            saved: Arc::new(Mutex::new(None)),
        })
    }

    /// Shows `prompt` and reads a line; `None` at the end of input.
    pub async fn line(&self, prompt: &str) -> std::io::Result<Option<String>> {
        show(prompt)?;
        read_line().await
    }

    /// Shows `prompt` with echo off and reads a line, which is not shown;
    /// `None` at the end of input.
    pub async fn secret(&self, prompt: &str) -> std::io::Result<Option<String>> {
        let stdin = std::io::stdin();
        let before = termios::tcgetattr(&stdin)?;
        let mut quiet = before.clone();
        quiet.local_modes.remove(LocalModes::ECHO);
        // The Enter that ends the secret still moves to the next line.
        quiet.local_modes.insert(LocalModes::ECHONL);
        *self.saved.lock().unwrap_or_else(PoisonError::into_inner) = Some(before);
        termios::tcsetattr(&stdin, OptionalActions::Now, &quiet)?;
        let read = async {
            show(prompt)?;
            read_line().await
        }
        .await;
        self.restore();
        read
    }

    /// Switches echo back on if a secret's reading was cut short.
    pub fn restore(&self) {
        if let Some(before) = self.saved.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &before);
        }
    }
}

fn show(prompt: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(prompt.as_bytes())?;
    out.flush()
}

async fn read_line() -> std::io::Result<Option<String>> {
    let read = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let n = std::io::stdin().lock().read_line(&mut line)?;
        Ok((n > 0).then(|| line.trim_end_matches(['\r', '\n']).to_owned()))
    });
    read.await.map_err(std::io::Error::other)?
}
