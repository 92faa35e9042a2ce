//! A child server's standard error: logged a line at a time, each line cut
//! at a bound, and the first line that tells of a refusal or a module not
//! found ([`crate::safety::sandbox::refused`]) kept, so that a server that fails
//! confined can say why in its last error. The first: the runtimes put the
//! error's own line first, then its trace and details.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest line of a child's standard error that is logged whole.
const MAX_STDERR_LINE_BYTES: usize = 1024;
/// Longest line kept as what the child said (in characters).
const MAX_TOLD_CHARS: usize = 300;

/// The first line of a child's standard error that tells of a permission
/// refused or a module not found, shared with the task reading it.
#[derive(Clone, Debug, Default)]
pub struct Told(Arc<Mutex<Option<String>>>);

impl Told {
    /// The line, if the child wrote one.
    pub fn line(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Keeps `line` unless one is kept already.
    fn keep(&self, line: &str) {
        let mut kept = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.is_none() {
            *kept = Some(line.chars().take(MAX_TOLD_CHARS).collect());
        }
    }
}

/// Logs what the child writes to its standard error, a line at a time, each
/// line cut at [`MAX_STDERR_LINE_BYTES`], keeping in `told` the first that
/// tells of a refusal; ends when the child closes it.
pub async fn follow_stderr(server: String, stderr: impl AsyncRead + Unpin, told: Told) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut reader, &mut line, MAX_STDERR_LINE_BYTES).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                if !text.is_empty() {
                    tracing::info!(server = %server, line = %text, "mcp server stderr");
                    if crate::safety::sandbox::refused(text) {
                        told.keep(text);
                    }
                }
            }
        }
    }
}

/// Reads one line into `line`, keeping at most `limit` bytes of it and
/// skipping the rest; the bytes read, 0 at the end.
async fn read_line_bounded(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(read);
        }
        let (used, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        let room = limit.saturating_sub(line.len());
        line.extend_from_slice(&buffer[..used.min(room)]);
        reader.consume(used);
        read += used;
        if done {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_line_is_cut_and_the_next_one_read_whole() {
        let input = format!("{}\nnext\n", "x".repeat(5000));
        let mut reader = BufReader::with_capacity(64, input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line_bounded(&mut reader, &mut line, 100).await.unwrap(), 5001);
        assert_eq!(line.len(), 100);
        line.clear();
        read_line_bounded(&mut reader, &mut line, 100).await.unwrap();
        assert_eq!(line, b"next\n");
        line.clear();
        assert_eq!(read_line_bounded(&mut reader, &mut line, 100).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn the_first_line_telling_of_a_refusal_is_kept() {
        let said = "node:internal/modules/esm/resolve:873\n  \
                    Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@modelcontextprotocol/sdk' imported from /x\n\
                    \x20   at packageResolve {\n  code: 'ERR_MODULE_NOT_FOUND'\n}\nNode.js v20.20.2\n";
        let told = Told::default();
        follow_stderr("everything".into(), said.as_bytes(), told.clone()).await;
        assert_eq!(
            told.line().as_deref(),
            Some("Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@modelcontextprotocol/sdk' imported from /x")
        );
        let quiet = Told::default();
        follow_stderr("time".into(), "Starting\nready\n".as_bytes(), quiet.clone()).await;
        assert_eq!(quiet.line(), None);
    }
}
