//! Newline-delimited framing with a cap on the line length.
//!
//! signal-cli writes one JSON object per line. A line longer than the cap (a
//! runaway attachment preview, a broken peer) must not grow our memory without
//! bound nor stall the stream: [`LineReader`] drops it, byte by byte up to the
//! next newline, and reports [`Line::TooLong`] so the caller can log it and go
//! on. [`LineReader::next`] is cancel-safe — all state lives in the reader
//! between awaits — so the connection task can `select!` on it.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One framed item read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its newline (and without a trailing `\r`).
    Complete(Vec<u8>),
    /// A line longer than the cap, dropped; `len` counts its bytes.
    TooLong { len: usize },
}

/// Reads lines of at most `max` bytes from `R`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    buf: Vec<u8>,
    /// Bytes of an over-long line dropped so far; `Some` while skipping one.
    skipping: Option<usize>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::new(inner),
            max,
            buf: Vec::new(),
            skipping: None,
        }
    }

    /// The next line, or `None` at the end of the stream (an unfinished last
    /// line is dropped: signal-cli terminates every line).
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(available.len());
            match self.skipping.as_mut() {
                Some(dropped) => *dropped += take,
                None if self.buf.len() + take > self.max => {
                    self.skipping = Some(self.buf.len() + take);
                    self.buf = Vec::new();
                }
                None => self.buf.extend_from_slice(&available[..take]),
            }
            let consumed = take + usize::from(newline.is_some());
            self.inner.consume(consumed);
            if newline.is_none() {
                continue;
            }
            if let Some(len) = self.skipping.take() {
                return Ok(Some(Line::TooLong { len }));
            }
            let mut line = std::mem::take(&mut self.buf);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(Line::Complete(line)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(input, max);
        let mut lines = Vec::new();
        while let Some(line) = reader.next().await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn splits_on_newlines_and_drops_an_unfinished_tail() {
        let lines = read_all(b"a\r\nbc\n\nunfinished", 8).await;
        assert_eq!(
            lines,
            vec![
                Line::Complete(b"a".to_vec()),
                Line::Complete(b"bc".to_vec()),
                Line::Complete(Vec::new())
            ]
        );
    }

    #[tokio::test]
    async fn skips_an_over_long_line_and_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n12345678\n");
        let lines = read_all(&input, 8).await;
        assert_eq!(
            lines,
            vec![
                Line::TooLong { len: 100 },
                Line::Complete(b"ok".to_vec()),
                Line::Complete(b"12345678".to_vec())
            ]
        );
    }
}
