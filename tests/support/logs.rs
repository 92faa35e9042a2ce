//! Everything logged on this thread while a [`LogCapture`] lives, for tests
//! that check what a gateway logs (and that no secret is in it). The tests run
//! on tokio's current-thread runtime, so the gateway's tasks log here too.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

/// Collects what is logged while alive.
pub struct LogCapture {
    buffer: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

struct CaptureWriter(Arc<Mutex<Vec<u8>>>);

impl Write for CaptureWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Captures every level, from now until dropped.
    pub fn start() -> Self {
        // Every test runs in one process, and tracing caches per call site
        // whether any subscriber wants it: one first reached on a thread
        // with no capture could be cached as wanted by nobody, and missed
        // here. A global subscriber that takes everything and keeps nothing
        // leaves every call site wanted, so a capture sees all it should.
        static WANTED: std::sync::Once = std::sync::Once::new();
        WANTED.call_once(|| {
            let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
        });
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || CaptureWriter(Arc::clone(&writer)))
            .finish();
        LogCapture {
            buffer,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}
