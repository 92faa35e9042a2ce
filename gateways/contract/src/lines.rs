//! Newline-delimited framing with a cap on the line length, for gateways whose
//! peer speaks one JSON object per line (signal-cli, the local socket).
//!
//! A codec such as `LinesCodec` under `Framed` ends the stream after its first
//! decode error, which would drop a peer for one over-long line. This reader
//! reports such a line as [`ReadLine::TooLong`] as soon as it passes the cap —
//! before its end arrives, so neither memory nor the answer to the peer waits
//! on a runaway line — skips the rest of it up to the next newline, and goes
//! on with the next line. A last line without a newline is reported apart, as
//! [`ReadLine::Unterminated`]: a peer that ends every line (signal-cli) drops
//! it, one that may not (a socket client) reads it. Bytes are not checked as
//! UTF-8: each caller decodes them its own way (strictly for the socket's
//! frames, lossily for a child's log lines).
//!
//! [`LineReader::next_line`] is cancel-safe: everything read is kept in the
//! reader between awaits, so it can sit in a `select!` next to a shutdown.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One step of reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadLine {
    /// A complete line, without its `\n` or `\r\n`.
    Line(Vec<u8>),
    /// The peer closed its side after these bytes, with no newline after them.
    Unterminated(Vec<u8>),
    /// A line longer than the cap, dropped; the rest of it is skipped. `len`
    /// counts its bytes read before it was dropped: the whole line when its
    /// end came with them, otherwise more than the cap.
    TooLong {
        /// The bytes of it read before it was dropped.
        len: usize,
    },
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

    /// The next line, a too-long report, an unterminated last line, or the
    /// end of the stream.
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
                    return Ok(self.finish_line(ReadLine::Line));
                }
                None => {
                    let len = chunk.len();
                    if !self.discarding {
                        self.line.extend_from_slice(chunk);
                    }
                    self.inner.consume(len);
                    // One byte of slack for the `\r` of a `\r\n` still to come.
                    if !self.discarding && self.line.len() > self.max + 1 {
                        let len = self.line.len();
                        self.line = Vec::new();
                        self.discarding = true;
                        return Ok(ReadLine::TooLong { len });
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
            self.finish_line(ReadLine::Unterminated)
        }
    }

    /// The current line as `complete` (without a trailing `\r`), or as too
    /// long.
    fn finish_line(&mut self, complete: fn(Vec<u8>) -> ReadLine) -> ReadLine {
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max {
            ReadLine::TooLong { len: line.len() }
        } else {
            complete(line)
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
    async fn splits_on_newlines_and_reports_an_unfinished_tail_apart() {
        let lines = read_all(b"a\r\nbc\n\nunfinished", 16).await;
        assert_eq!(
            lines,
            vec![
                line("a"),
                line("bc"),
                line(""),
                ReadLine::Unterminated(b"unfinished".to_vec())
            ]
        );
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
            vec![ReadLine::TooLong { len: 9 }, ReadLine::TooLong { len: 9 }]
        );
    }

    #[tokio::test]
    async fn the_line_after_a_too_long_one_is_read() {
        let input = format!("{}\nnext\n", "x".repeat(100_000));
        let lines = read_all(input.as_bytes(), 16).await;
        assert!(
            matches!(lines[0], ReadLine::TooLong { len } if len > 16),
            "{:?}",
            lines[0]
        );
        assert_eq!(lines[1..], [line("next")]);
    }

    #[tokio::test]
    async fn skips_an_over_long_line_and_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n12345678\n");
        assert_eq!(
            read_all(&input, 8).await,
            vec![ReadLine::TooLong { len: 100 }, line("ok"), line("12345678")]
        );
    }

    #[tokio::test]
    async fn a_too_long_line_is_reported_before_its_end_arrives() {
        let (mut tx, rx) = tokio::io::duplex(1024);
        let mut reader = LineReader::new(rx, 16);
        tx.write_all(&[b'x'; 100]).await.unwrap();
        assert_eq!(next(&mut reader).await, ReadLine::TooLong { len: 100 });
        tx.write_all(b"still the long line\nok\n").await.unwrap();
        assert_eq!(next(&mut reader).await, line("ok"));
    }

    #[tokio::test]
    async fn crlf_is_tolerated_and_empty_lines_are_lines() {
        assert_eq!(read_all(b"a\r\n\r\nb\n", 8).await, vec![line("a"), line(""), line("b")]);
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_returned() {
        assert_eq!(
            read_all(b"a\nlast", 8).await,
            vec![line("a"), ReadLine::Unterminated(b"last".to_vec())]
        );
        assert_eq!(read_all(b"", 8).await, vec![]);
    }

    #[tokio::test]
    async fn a_too_long_line_cut_by_eof_ends_the_stream() {
        assert_eq!(read_all(&[b'x'; 40], 8).await, vec![ReadLine::TooLong { len: 40 }]);
    }
}
