//! The daemon's recent log lines, kept in memory for the dashboard's Logs
//! page: a tracing layer ([`Keeping`]) copies each line written into a ring
//! ([`RecentLogs`]) bounded in lines and in bytes (the oldest go first), each
//! line cut at [`MAX_LINE_BYTES`] after its secrets are redacted. Every line
//! has a sequence number, so a reader asks for what came after the last one
//! it saw; the admin path redacts the configured secrets again (a reload's
//! too) before anything is shown.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use passepartout_gateway::LiveSecrets;
use serde::Serialize;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines kept at most.
pub const MAX_LINES: usize = 2000;
/// Bytes of text kept at most, over every line.
pub const MAX_BYTES: usize = 512 * 1024;
/// A longer line is cut here.
pub const MAX_LINE_BYTES: usize = 2048;

/// One line as it was logged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogLine {
    /// Counts up from 1 over the daemon's life.
    pub seq: u64,
    /// When, in ms since the epoch.
    pub at_ms: u64,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: &'static str,
    /// The module that logged it (`passepartout::daemon::reload`).
    pub target: String,
    /// The message, then its fields as `name=value`.
    pub text: String,
}

/// Which lines a reader wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Only lines after this one.
    pub after: u64,
    /// This level and the more severe ones; none: every level.
    pub level: Option<Level>,
    /// Only targets starting with this (`passepartout_telegram`).
    pub target: Option<String>,
    /// At most this many, the newest.
    pub limit: usize,
}

/// The ring of recent lines; shared by the layer that fills it and the
/// admin path that reads it.
#[derive(Debug, Default)]
pub struct RecentLogs {
    ring: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    lines: VecDeque<LogLine>,
    bytes: usize,
    last: u64,
}

impl RecentLogs {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Keeps a line, dropping the oldest while too many lines or bytes are kept.
    pub fn push(&self, at_ms: u64, level: &'static str, target: &str, mut text: String) {
        if text.len() > MAX_LINE_BYTES {
            let mut cut = MAX_LINE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.last += 1;
        let line = LogLine {
            seq: ring.last,
            at_ms,
            level,
            target: target.to_owned(),
            text,
        };
        ring.bytes += size(&line);
        ring.lines.push_back(line);
        while ring.lines.len() > MAX_LINES || ring.bytes > MAX_BYTES {
            let Some(oldest) = ring.lines.pop_front() else { break };
            ring.bytes -= size(&oldest);
        }
    }

    /// The lines `wanted` names, oldest first, and the sequence number of
    /// the newest line kept (matching or not).
    pub fn lines(&self, wanted: &Wanted) -> (Vec<LogLine>, u64) {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let matching: Vec<&LogLine> = ring
            .lines
            .iter()
            .filter(|line| line.seq > wanted.after)
            .filter(|line| wanted.level.is_none_or(|level| level_of(line.level) <= level))
            .filter(|line| {
                wanted
                    .target
                    .as_deref()
                    .is_none_or(|target| line.target.starts_with(target))
            })
            .collect();
        let skip = matching.len().saturating_sub(wanted.limit);
        (matching[skip..].iter().map(|line| (*line).clone()).collect(), ring.last)
    }

    /// How many lines and bytes are kept.
    pub fn kept(&self) -> (usize, usize) {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        (ring.lines.len(), ring.bytes)
    }
}

fn size(line: &LogLine) -> usize {
    line.text.len() + line.target.len()
}

/// `ERROR` … `TRACE` as a level (`tracing`'s order: ERROR is the least).
fn level_of(name: &str) -> Level {
    name.parse().unwrap_or(Level::TRACE)
}

/// The tracing layer that copies every line logged into a [`RecentLogs`],
/// its secrets redacted first: a line cut to its length could otherwise
/// keep the start of one, which nothing would match later.
pub struct Keeping {
    pub logs: Arc<RecentLogs>,
    pub secrets: LiveSecrets,
}

impl<S: Subscriber> Layer<S> for Keeping {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let mut line = text.message;
        if !text.fields.is_empty() {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&text.fields);
        }
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        let metadata = event.metadata();
        let line = self.secrets.now().redact(&line);
        self.logs
            .push(at_ms, metadata.level().as_str(), metadata.target(), line);
    }
}

/// An event's message and its other fields, as the text log writes them.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.field(field, format_args!("{value}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }
}

impl Text {
    fn field(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        if self.fields.len() > MAX_LINE_BYTES {
            return;
        }
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={value}", field.name());
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn lines_are_kept_with_their_fields_and_filtered() {
        let logs = RecentLogs::new();
        let secrets = LiveSecrets::new(passepartout_gateway::Secrets::new([
            "sk-canary-in-a-long-line".to_owned()
        ]));
        let subscriber = tracing_subscriber::registry().with(Keeping {
            logs: logs.clone(),
            secrets,
        });
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "passepartout::daemon::reload", changed = 2, "configuration reloaded");
            tracing::warn!(target: "passepartout_telegram::poll", error = %"timed out", "polling failed");
            tracing::debug!(target: "passepartout::daemon", "detail");
        });
        let all = Wanted {
            limit: 100,
            ..Wanted::default()
        };
        let (lines, last) = logs.lines(&all);
        assert_eq!(last, 3);
        assert_eq!(lines[0].text, "configuration reloaded changed=2");
        assert_eq!(lines[1].text, "polling failed error=timed out");
        assert_eq!(lines[1].level, "WARN");
        let warnings = Wanted {
            level: Some(Level::WARN),
            ..all.clone()
        };
        assert_eq!(logs.lines(&warnings).0.len(), 1);
        let info = Wanted {
            level: Some(Level::INFO),
            ..all.clone()
        };
        assert_eq!(logs.lines(&info).0.len(), 2, "info and what is more severe");
        let telegram = Wanted {
            target: Some("passepartout_telegram".into()),
            ..all.clone()
        };
        assert_eq!(logs.lines(&telegram).0[0].seq, 2);
        let after = Wanted { after: 2, ..all };
        assert_eq!(logs.lines(&after).0.len(), 1, "only what came after");
    }

    #[test]
    fn a_secret_where_a_long_line_is_cut_is_redacted_before_the_cut() {
        let logs = RecentLogs::new();
        let secret = "sk-canary-in-a-long-line";
        let secrets = LiveSecrets::new(passepartout_gateway::Secrets::new([secret.to_owned()]));
        let subscriber = tracing_subscriber::registry().with(Keeping {
            logs: logs.clone(),
            secrets,
        });
        // The secret's first half before the cut, its second after it.
        let padding = "x".repeat(MAX_LINE_BYTES - secret.len() / 2);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!("{padding}{secret} and more");
        });
        let all = Wanted {
            limit: 10,
            ..Wanted::default()
        };
        let text = &logs.lines(&all).0[0].text;
        assert!(
            !text.contains(&secret[..secret.len() / 2]),
            "the secret's start was kept: {}",
            &text[text.len() - 40..]
        );
        assert!(text.contains(passepartout_gateway::REDACTED));
    }

    #[test]
    fn the_ring_is_bounded_in_lines_and_bytes() {
        let logs = RecentLogs::new();
        for i in 0..MAX_LINES + 10 {
            logs.push(0, "INFO", "t", format!("line {i}"));
        }
        assert_eq!(logs.kept().0, MAX_LINES);
        let newest = Wanted {
            limit: 1,
            ..Wanted::default()
        };
        assert_eq!(logs.lines(&newest).0[0].text, format!("line {}", MAX_LINES + 9));
        let long = "é".repeat(MAX_LINE_BYTES);
        for _ in 0..MAX_LINES {
            logs.push(0, "INFO", "t", long.clone());
        }
        let (lines, bytes) = logs.kept();
        assert!(bytes <= MAX_BYTES && lines < MAX_LINES, "{lines} lines, {bytes} bytes");
        let one = logs.lines(&newest).0.remove(0);
        assert!(
            one.text.len() <= MAX_LINE_BYTES + '…'.len_utf8(),
            "cut: {}",
            one.text.len()
        );
    }
}
