//! A program run on a pseudo-terminal, as a person runs it: its standard
//! input, output and error are the terminal, whose echo is on as a fresh
//! terminal's is. Tests type lines into it and wait for what it shows.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use tokio::sync::mpsc;

/// A child on a pseudo-terminal.
pub struct Pty {
    pub child: Child,
    writer: std::fs::File,
    chunks: mpsc::Receiver<String>,
    /// Everything the terminal showed so far.
    pub shown: String,
    /// How far [`Pty::expect`] has read in `shown`.
    seen: usize,
}

impl Pty {
    /// Starts `command` with the terminal as its standard input, output and error.
    pub fn spawn(mut command: Command) -> Pty {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave: OwnedFd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .expect("open the terminal's slave side")
            .into();
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        let child = command
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave))
            .spawn()
            .expect("spawn on the terminal");
        // Only the child holds the slave side now: its exit ends the reading.
        drop(slave);
        let writer = std::fs::File::from(master.try_clone().unwrap());
        let mut reader = std::fs::File::from(master);
        let (sender, chunks) = mpsc::channel(64);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // EIO once the child closed the terminal.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                if sender
                    .blocking_send(String::from_utf8_lossy(&buffer[..n]).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        });
        Pty {
            child,
            writer,
            chunks,
            shown: String::new(),
            seen: 0,
        }
    }

    /// Waits until the terminal shows `needle` after what was expected
    /// before, and returns what it showed up to and including it.
    ///
    /// # Panics
    /// If it was not shown within `timeout`.
    pub async fn expect(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(at) = self.shown[self.seen..].find(needle) {
                let end = self.seen + at + needle.len();
                let text = self.shown[self.seen..end].to_owned();
                self.seen = end;
                return text;
            }
            match tokio::time::timeout_at(deadline, self.chunks.recv()).await {
                Ok(Some(chunk)) => self.shown.push_str(&chunk),
                Ok(None) => panic!(
                    "the program ended without showing {needle:?}; it showed:\n{}",
                    self.shown
                ),
                Err(_) => panic!(
                    "{needle:?} not shown within {timeout:?}; the terminal showed:\n{}",
                    self.shown
                ),
            }
        }
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.writer.write_all(format!("{line}\r").as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Presses `keys` as they are: control keys (`"\x03"` is Ctrl-C) and
    /// escape sequences (`"\x1b[A"` is Up) included, no Enter added.
    pub fn press(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Everything the terminal shows until the program closes it.
    pub async fn rest(&mut self, timeout: Duration) -> String {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.chunks.recv()).await {
                Ok(Some(chunk)) => self.shown.push_str(&chunk),
                Ok(None) => return self.shown[self.seen..].to_owned(),
                Err(_) => panic!("the terminal stayed open past {timeout:?}; it showed:\n{}", self.shown),
            }
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
