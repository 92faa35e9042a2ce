//! Newline-delimited framing with a length limit that survives a bad line.
//!
//! A codec such as `LinesCodec` under `Framed` ends the stream after its first
//! decode error, which would drop a client for one over-long line. This reader
//! reports the line as [`ReadLine::TooLong`], skips the rest of it up to the
//! next newline, and goes on with the next line. It does not check UTF-8: the
//! caller answers that with an error frame of its own.
//!
//! [`LineReader::next_line`] is cancel-safe: everything read is kept in the
//! reader, so it can sit in a `select!` next to a shutdown signal.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line accepted by default, in bytes (without the newline).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024;

/// One step of reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadLine {
    /// A complete line, without its `\n` or `\r\n`.
    Line(Vec<u8>),
    /// A line longer than the limit; the rest of it is skipped.
    TooLong,
    /// The peer closed its side.
    Eof,
}

/// Reads newline-delimited lines of at most `max` bytes from `R`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    /// The start of the current line.
    line: Vec<u8>,
    /// Skipping the rest of a line already reported as too long.
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader that accepts lines of up to `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::new(inner),
            max,
            line: Vec::new(),
            discarding: false,
        }
    }

    /// The next line, a too-long report, or the end of the stream. A last
    /// line without a newline is returned as a line.
    pub async fn next_line(&mut self) -> io::Result<ReadLine> {
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(self.at_eof());
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let discarding = std::mem::replace(&mut self.discarding, false);
                    if !discarding {
                        self.line.extend_from_slice(&chunk[..end]);
                    }
                    self.inner.consume(end + 1);
                    if discarding {
                        continue;
                    }
                    return Ok(self.finish_line());
                }
                None => {
                    let len = chunk.len();
                    if !self.discarding {
                        self.line.extend_from_slice(chunk);
                    }
                    self.inner.consume(len);
                    // One byte of slack for the `\r` of a `\r\n` still to come.
                    if !self.discarding && self.line.len() > self.max + 1 {
                        self.line.clear();
                        self.discarding = true;
                        return Ok(ReadLine::TooLong);
                    }
                }
            }
        }
    }

    fn at_eof(&mut self) -> ReadLine {
        self.discarding = false;
        if self.line.is_empty() {
            ReadLine::Eof
        } else {
            self.finish_line()
        }
    }

    fn finish_line(&mut self) -> ReadLine {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            ReadLine::TooLong
        } else {
            ReadLine::Line(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt;

    use super::*;

    /// The next step, failing the test instead of hanging when none comes.
    async fn next<R: AsyncRead + Unpin>(reader: &mut LineReader<R>) -> ReadLine {
        let step = tokio::time::timeout(Duration::from_secs(5), reader.next_line());
        step.await.expect("the reader hangs").unwrap()
    }

    fn line(text: &str) -> ReadLine {
        ReadLine::Line(text.as_bytes().to_vec())
    }

    async fn read_all(input: &[u8], max: usize) -> Vec<ReadLine> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let next = next(&mut reader).await;
            if next == ReadLine::Eof {
                return out;
            }
            out.push(next);
        }
    }

    #[tokio::test]
    async fn lines_split_across_reads_are_joined() {
        let (mut tx, rx) = tokio::io::duplex(4);
        let writer = tokio::spawn(async move {
            for piece in [&b"{\"a\""[..], b":1}\n{\"b", b"\":2}", b"\n"] {
                tx.write_all(piece).await.unwrap();
            }
        });
        let mut reader = LineReader::new(rx, 64);
        assert_eq!(next(&mut reader).await, line("{\"a\":1}"));
        assert_eq!(next(&mut reader).await, line("{\"b\":2}"));
        writer.await.unwrap();
        assert_eq!(next(&mut reader).await, ReadLine::Eof);
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_accepted() {
        let input = format!("{}\n{}\r\n", "a".repeat(8), "b".repeat(8));
        assert_eq!(
            read_all(input.as_bytes(), 8).await,
            vec![line(&"a".repeat(8)), line(&"b".repeat(8))]
        );
    }

    #[tokio::test]
    async fn a_line_one_over_the_limit_is_too_long() {
        let input = format!("{}\n{}\r\n", "a".repeat(9), "b".repeat(9));
        assert_eq!(
            read_all(input.as_bytes(), 8).await,
            vec![ReadLine::TooLong, ReadLine::TooLong]
        );
    }

    #[tokio::test]
    async fn the_line_after_a_too_long_one_is_read() {
        let input = format!("{}\nnext\n", "x".repeat(100_000));
        assert_eq!(
            read_all(input.as_bytes(), 16).await,
            vec![ReadLine::TooLong, line("next")]
        );
    }

    #[tokio::test]
    async fn a_too_long_line_is_reported_before_its_end_arrives() {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let mut reader = LineReader::new(rx, 16);
        tx.write_all(&[b'x'; 100]).await.unwrap();
        assert_eq!(next(&mut reader).await, ReadLine::TooLong);
        tx.write_all(b"still the long line\nok\n").await.unwrap();
        assert_eq!(next(&mut reader).await, line("ok"));
    }

    #[tokio::test]
    async fn crlf_is_tolerated_and_empty_lines_are_lines() {
        assert_eq!(read_all(b"a\r\n\r\nb\n", 8).await, vec![line("a"), line(""), line("b")]);
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_returned() {
        assert_eq!(read_all(b"a\nlast", 8).await, vec![line("a"), line("last")]);
        assert_eq!(read_all(b"", 8).await, vec![]);
    }

    #[tokio::test]
    async fn a_too_long_line_cut_by_eof_ends_the_stream() {
        assert_eq!(read_all(&[b'x'; 40], 8).await, vec![ReadLine::TooLong]);
    }
}
