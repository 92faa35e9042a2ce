//! Server-sent events framing: bytes as they come off the wire, in chunks of
//! any size, turned into whole events (`event:` name and joined `data:`
//! lines), as the streaming backends read them. Lines are split on bytes
//! before they are decoded, so a multi-byte character cut between two
//! network chunks decodes whole. An event still open when the body ends is
//! dropped, as the SSE standard says: the backends then see that their final
//! event never came. Buffering is bounded by the caller's cap on the total
//! streamed size.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field; empty when the event had none (OpenAI sends none).
    pub event: String,
    /// The `data:` lines, joined by newlines.
    pub data: String,
}

/// Incremental parser: feed it chunks, collect the events they complete.
#[derive(Default)]
pub(super) struct SseParser {
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The event being built.
    event: String,
    data: Option<String>,
    /// The last chunk ended in `\r`, so a `\n` starting the next one ends nothing.
    after_cr: bool,
}

impl SseParser {
    /// Takes the next chunk of the body; returns the events it completes.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            let after_cr = std::mem::take(&mut self.after_cr);
            match byte {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_ended(&line) {
                        events.push(event);
                    }
                }
                _ => self.line.push(byte),
            }
        }
        events
    }

    fn line_ended(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            // A blank line dispatches the event, if it carried data.
            let event = std::mem::take(&mut self.event);
            return self.data.take().map(|data| SseEvent { event, data });
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            return None; // a comment, used as a keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            // `id` and `retry` serve reconnection, which a completion never does.
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: name.to_owned(),
            data: data.to_owned(),
        }
    }

    /// Feeds `body` in pieces of `size` bytes and collects every event.
    fn parse_in_pieces(body: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        body.chunks(size).flat_map(|piece| parser.push(piece)).collect()
    }

    #[test]
    fn events_come_whole_however_the_body_is_cut() {
        let body = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":\"ü 猫\"}\n\n";
        let expected = vec![event("message_start", "{\"a\":1}"), event("", "{\"b\":\"ü 猫\"}")];
        // Every piece size, including one byte at a time: multi-byte
        // characters are cut between chunks and still decode whole.
        for size in 1..=body.len() {
            assert_eq!(parse_in_pieces(body.as_bytes(), size), expected, "pieces of {size}");
        }
    }

    #[test]
    fn crlf_and_cr_line_ends_and_multi_line_data_are_understood() {
        let body = b"event: x\r\ndata: one\r\ndata: two\r\n\r\ndata:tight\r\rid: 7\nretry: 5\ndata: last\n\n";
        for size in 1..=body.len() {
            assert_eq!(
                parse_in_pieces(body, size),
                vec![event("x", "one\ntwo"), event("", "tight"), event("", "last")],
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: {\"half\": tr").is_empty());
        assert!(parser.push(b"ue}\n").is_empty());
    }

    #[test]
    fn a_blank_line_without_data_dispatches_nothing() {
        let mut parser = SseParser::default();
        assert_eq!(parser.push(b"event: ping\n\n\n"), Vec::new());
    }
}
