//! `[log]`: how the daemon writes its log lines on stderr — text for a
//! person and journald, or one JSON object per line for a log shipper.
//! Which lines are written is `RUST_LOG`'s to say (default `info`).

use serde::{Deserialize, Serialize};

/// How a log line is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// `2026-11-25T18:00:00Z  INFO passepartout::daemon: ready …`
    #[default]
    Text,
    /// `{"timestamp":…,"level":"INFO","fields":{"message":"ready",…},"target":…}`
    Json,
}

/// `[log]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
}
