//! Logging on stderr, set up once per process: at `default` level unless
//! `RUST_LOG` says otherwise, as text (coloured at a terminal, plain for
//! journald and pipes) or as JSON lines for a log shipper, with every
//! configured secret redacted ([`Redacting`]). Each line written is kept in
//! memory too, for the dashboard's Logs page ([`RecentLogs`]).

use std::io::IsTerminal;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use passepartout_gateway::LiveSecrets;

use super::log_redaction::Redacting;
use crate::config::LogFormat;
use crate::daemon::recent_logs::{Keeping, RecentLogs};

/// Sets up logging for this process, `secrets` kept out of every line; the
/// lines written are kept in the ring returned.
pub fn init(default: &str, format: LogFormat, secrets: LiveSecrets) -> Arc<RecentLogs> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let recent = RecentLogs::new();
    let registry = tracing_subscriber::registry().with(filter).with(Keeping {
        logs: recent.clone(),
        secrets: secrets.clone(),
    });
    let text = tracing_subscriber::fmt::layer().with_writer(Redacting::new(std::io::stderr, secrets));
    match format {
        LogFormat::Text => registry.with(text.with_ansi(std::io::stderr().is_terminal())).init(),
        LogFormat::Json => registry.with(text.json().with_current_span(false)).init(),
    }
    recent
}
