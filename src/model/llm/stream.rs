//! Streamed completions: the [`TextSink`] a caller hands a backend to see the
//! reply's text as it is generated, and the loop every streaming backend
//! reads its server-sent events with. The loop owns the limits — a cap on the
//! total streamed size, an idle timeout between chunks (the client's total
//! timeout still bounds the whole exchange) — and the one rule that makes
//! streaming safe: an answer is returned only once the backend has seen its
//! final event. A stream that ends early, breaks, or reports an error is an
//! [`LlmError`] like any other, never a half answer passed off as whole; the
//! text already given to the sink is then only a preview that came to
//! nothing. Each backend's wire format is an [`Assembly`] in its own file.

use std::time::Duration;

use reqwest::Response;
use reqwest::header::CONTENT_TYPE;

use super::sse::{SseEvent, SseParser};
use super::{ChatResponse, LlmError, http};

/// Longest silence between two chunks of a stream before it counts as dead.
/// Generous, because a local model may think for a long while before its
/// first token; [`crate::model::llm::OpenAiClient::with_idle_timeout`] and its
/// Anthropic twin change it.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Largest stream we read, in bytes on the wire: several times the largest
/// whole answer, since every delta carries its JSON envelope.
const MAX_STREAM_BYTES: usize = 32 * 1024 * 1024;

/// The limits on reading one stream.
#[derive(Clone, Copy, Debug)]
pub(super) struct StreamLimits {
    /// Longest silence between two chunks.
    pub idle: Duration,
    /// Most bytes read in all.
    pub max_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            idle: STREAM_IDLE_TIMEOUT,
            max_bytes: MAX_STREAM_BYTES,
        }
    }
}

/// Where a streamed reply's text goes as it arrives.
///
/// Called from the task running the completion, in order, with every piece
/// of text exactly once; it must not block (hand the text on, or keep it).
/// Tool calls are not shown: they come whole in the final [`ChatResponse`].
pub trait TextSink: Send + Sync {
    /// The next piece of the reply's text; never empty.
    fn text(&self, delta: &str);

    /// The text given so far came to nothing: the stream broke off and
    /// another provider is asked, or the model starts a new round after
    /// its tool calls. What comes next starts a new text.
    fn discard(&self) {}
}

/// Every piece, as its own `String`, to whoever holds the receiver; a
/// receiver that has gone away is not an error for the completion.
impl TextSink for tokio::sync::mpsc::UnboundedSender<String> {
    fn text(&self, delta: &str) {
        let _ = self.send(delta.to_owned());
    }
}

/// Text is dropped: a stream whose deltas nobody watches.
impl TextSink for () {
    fn text(&self, _delta: &str) {}
}

/// One backend's way of building its answer from its events.
pub(super) trait Assembly {
    /// Takes one event, passing new text to `sink`; `Ok(true)` when it was
    /// the final one, and an error for an event reporting a failure.
    fn event(&mut self, event: &SseEvent, sink: &dyn TextSink) -> Result<bool, LlmError>;

    /// The answer, once the stream is over: `finished` says whether the final
    /// event came. An answer not known to be whole is an error.
    fn finish(self, finished: bool) -> Result<ChatResponse, LlmError>;
}

/// The error of a stream that stopped before its final event.
pub(super) fn cut_short() -> LlmError {
    LlmError::Unreachable {
        reason: "the stream ended before the answer was complete".to_owned(),
    }
}

/// Reads the events of a successful `response` into `assembly`, until its
/// final event, the end of the body, a failure, or too long a silence.
pub(super) async fn read_events<A: Assembly>(
    mut response: Response,
    mut assembly: A,
    sink: &dyn TextSink,
    limits: StreamLimits,
) -> Result<ChatResponse, LlmError> {
    let mut parser = SseParser::default();
    let mut total = 0usize;
    loop {
        let chunk = tokio::time::timeout(limits.idle, response.chunk())
            .await
            .map_err(|_| LlmError::Timeout)?
            .map_err(http::transport_error)?;
        let Some(chunk) = chunk else {
            return assembly.finish(false);
        };
        total += chunk.len();
        if total > limits.max_bytes {
            return Err(LlmError::Malformed {
                reason: format!("the stream is larger than {} bytes", limits.max_bytes),
            });
        }
        for event in parser.push(&chunk) {
            if assembly.event(&event, sink)? {
                return assembly.finish(true);
            }
        }
    }
}

/// Whether a successful answer is an event stream rather than one body.
pub(super) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/event-stream"))
}

/// The event's data as JSON of type `T`, or a malformed-answer error naming what was expected.
pub(super) fn parse_data<T: serde::de::DeserializeOwned>(event: &SseEvent, what: &str) -> Result<T, LlmError> {
    serde_json::from_str(&event.data).map_err(|error| LlmError::Malformed {
        reason: format!("a streamed event is not {what}: {error}"),
    })
}

/// Running an assembly over a whole body, for the backends' unit tests.
#[cfg(test)]
pub(super) mod testing {
    use std::sync::Mutex;

    use super::*;

    /// A sink keeping every piece it was given.
    #[derive(Default)]
    pub(in crate::model::llm) struct Pieces(pub Mutex<Vec<String>>);

    impl TextSink for Pieces {
        fn text(&self, delta: &str) {
            self.0.lock().unwrap().push(delta.to_owned());
        }
    }

    impl Pieces {
        pub(in crate::model::llm) fn joined(&self) -> String {
            self.0.lock().unwrap().concat()
        }
    }

    /// Feeds `body` to `assembly` in network chunks of `size` bytes, as
    /// [`read_events`] does, then ends it; returns the answer and the text
    /// the sink saw.
    pub(in crate::model::llm) fn assemble<A: Assembly>(
        body: &str,
        size: usize,
        mut assembly: A,
    ) -> (Result<ChatResponse, LlmError>, String) {
        let sink = Pieces::default();
        let mut parser = SseParser::default();
        for chunk in body.as_bytes().chunks(size) {
            for event in parser.push(chunk) {
                match assembly.event(&event, &sink) {
                    Ok(true) => return (assembly.finish(true), sink.joined()),
                    Ok(false) => {}
                    Err(error) => return (Err(error), sink.joined()),
                }
            }
        }
        (assembly.finish(false), sink.joined())
    }
}
