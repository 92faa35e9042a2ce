//! The daemon's log lines with every configured secret replaced by
//! `[redacted]` before they reach standard error: a model provider's error
//! may quote the key it was sent, a tool's failure the token it read. The
//! secrets are the daemon's live set, so a secret a reload brings is kept
//! out from then on.
//!
//! [`Redacting`] wraps the writer the log's formatter writes through: each
//! line is gathered whole, redacted, and written in one piece when the
//! formatter is done with it.

use std::io::{self, Write};

use passepartout_gateway::LiveSecrets;
use tracing_subscriber::fmt::MakeWriter;

/// A `MakeWriter` whose lines have the secrets in `secrets` redacted.
pub struct Redacting<M> {
    inner: M,
    secrets: LiveSecrets,
}

impl<M> Redacting<M> {
    pub fn new(inner: M, secrets: LiveSecrets) -> Self {
        Self { inner, secrets }
    }
}

/// One line being written: gathered, then redacted and written whole when
/// dropped.
pub struct Line<W: Write> {
    gathered: Vec<u8>,
    inner: W,
    secrets: LiveSecrets,
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = Line<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        Line {
            gathered: Vec::new(),
            inner: self.inner.make_writer(),
            secrets: self.secrets.clone(),
        }
    }
}

impl<W: Write> Write for Line<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.gathered.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for Line<W> {
    fn drop(&mut self) {
        if self.gathered.is_empty() {
            return;
        }
        let secrets = self.secrets.now();
        let text = String::from_utf8_lossy(&self.gathered);
        let redacted = secrets.redact(&text);
        // Nowhere to say that the log could not be written.
        let _ = self.inner.write_all(redacted.as_bytes());
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use passepartout_gateway::Secrets;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// What was written, shared with the test.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl Write for Written {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Written {
        type Writer = Written;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn a_secret_in_a_log_line_is_redacted_and_one_a_reload_brings_too() {
        let written = Written::default();
        let secrets = LiveSecrets::new(Secrets::new(["sk-canary-123456".to_owned()]));
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(Redacting::new(written.clone(), secrets.clone()));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(
                error = "Incorrect API key provided: sk-canary-123456",
                "provider failed"
            );
            secrets.add(&Secrets::new(["tok-reloaded-654321".to_owned()]));
            tracing::warn!("the bot said: tok-reloaded-654321 is not a token");
        });
        let text = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("sk-canary-123456"), "{text}");
        assert!(!text.contains("tok-reloaded-654321"), "{text}");
        assert!(text.contains("Incorrect API key provided: [redacted]"), "{text}");
        assert!(text.contains("the bot said: [redacted] is not a token"), "{text}");
        assert_eq!(text.lines().count(), 2, "one line an event: {text}");
    }
}
