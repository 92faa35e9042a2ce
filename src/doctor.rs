//! `passepartout doctor`: one line per part — config, store, socket, the
//! Telegram bot when enabled, each model provider — saying ok, degraded or failed, and for the last two what
//! to do about it. The daemon runs the provider checks at start and logs them;
//! it starts anyway ("fail open").

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use passepartout_socket::{Client, ClientError};

use crate::config::Config;
use crate::data_dir::{DataDirError, DataDirLock};
use crate::llm::{ChatModel, LlmError};
use crate::pipeline::cascade::EntryState;
use crate::store::Store;

/// How a part is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    Degraded,
    Failed,
}

/// One doctor line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub part: String,
    pub level: Level,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    fn new(part: impl Into<String>, level: Level, detail: impl Into<String>, fix: Option<String>) -> Self {
        Self {
            part: part.into(),
            level,
            detail: detail.into(),
            fix,
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Ok => "ok",
            Level::Degraded => "degraded",
            Level::Failed => "failed",
        };
        write!(f, "{level:<9}{:<16}{}", self.part, self.detail)?;
        if let Some(fix) = &self.fix {
            write!(f, " — {fix}")?;
        }
        Ok(())
    }
}

/// Every check for `config`, in order.
pub async fn run(config: &Config, providers: &[Arc<dyn ChatModel>]) -> Vec<Check> {
    let mut checks = Vec::new();
    let socket_path = config.socket_path();
    let daemon = if config.socket.enabled {
        match tokio::time::timeout(Duration::from_secs(5), Client::connect(&socket_path, None)).await {
            Ok(Ok(mut client)) => {
                checks.push(Check::new(
                    "socket",
                    Level::Ok,
                    format!("daemon answering at {}", socket_path.display()),
                    None,
                ));
                // The daemon probes with its own keys, and a provider that
                // answers is healthy again there.
                let limit = recheck_limit(config);
                tokio::time::timeout(limit, client.recheck())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Ok(Err(ClientError::NotRunning { .. })) => {
                checks.push(Check::new(
                    "socket",
                    Level::Degraded,
                    format!("no daemon listening at {}", socket_path.display()),
                    Some("start it with `passepartout run`".into()),
                ));
                None
            }
            Ok(Err(error)) => {
                checks.push(Check::new(
                    "socket",
                    Level::Failed,
                    error.to_string(),
                    Some("check the daemon's log".into()),
                ));
                None
            }
            Err(_) => {
                checks.push(Check::new(
                    "socket",
                    Level::Failed,
                    format!("{} did not answer within 5 s", socket_path.display()),
                    Some("the daemon may be stuck; check its log".into()),
                ));
                None
            }
        }
    } else {
        checks.push(Check::new("socket", Level::Ok, "disabled in the configuration", None));
        None
    };
    checks.push(store_check(config, daemon.as_ref()));
    if config.telegram.enabled {
        checks.push(telegram_check(config).await);
    }
    if config.signal.enabled {
        checks.push(match crate::signal_cli::check(config).await {
            Ok(detail) => Check::new("signal", Level::Ok, detail, None),
            Err(problem) => Check::new("signal", Level::Failed, problem, None),
        });
    }
    match &daemon {
        Some(status) => checks.extend(daemon_provider_checks(status)),
        None => {
            for provider in providers {
                checks.push(provider_check(provider.as_ref()).await);
            }
        }
    }
    checks
}

/// getMe with the configured token: the bot's name, or the exact failure.
async fn telegram_check(config: &Config) -> Check {
    let settings = match crate::telegram::settings(config) {
        Ok(settings) => settings,
        Err(error) => {
            return Check::new(
                "telegram",
                Level::Failed,
                error.to_string(),
                Some("set the bot token (telegram.token_env or telegram.token_file)".into()),
            );
        }
    };
    let limit = Duration::from_secs(15);
    match tokio::time::timeout(limit, passepartout_telegram::check(&settings)).await {
        Ok(Ok(bot)) => Check::new(
            "telegram",
            Level::Ok,
            format!("{bot} answers at {}", settings.api_url),
            None,
        ),
        Ok(Err(error)) => Check::new(
            "telegram",
            Level::Failed,
            error,
            Some("check the token with @BotFather, and telegram.api_url".into()),
        ),
        Err(_) => Check::new(
            "telegram",
            Level::Failed,
            format!("{} did not answer within {} s", settings.api_url, limit.as_secs()),
            Some("check the network, or telegram.api_url".into()),
        ),
    }
}

/// Long enough for the daemon to probe every provider in turn.
fn recheck_limit(config: &Config) -> Duration {
    let each: u64 = config
        .llm
        .providers
        .iter()
        .map(|p| p.timeout_s + p.connect_timeout_s)
        .sum();
    Duration::from_secs(each + 5)
}

/// The providers as the running daemon sees them after probing them again.
fn daemon_provider_checks(status: &serde_json::Value) -> Vec<Check> {
    crate::status::providers(status)
        .into_iter()
        .map(|provider| {
            let part = format!("model {}", provider.name);
            let endpoint = provider.endpoint;
            match (provider.state, provider.last_error) {
                (EntryState::Unhealthy, error) => Check::new(
                    part,
                    Level::Failed,
                    format!("{endpoint}: {}", error.as_deref().unwrap_or("credentials refused")),
                    Some("set the provider's API key (api_key_env or api_key_file) and restart the daemon".into()),
                ),
                (EntryState::CoolingDown, _) => Check::new(
                    part,
                    Level::Degraded,
                    format!(
                        "{endpoint}: rate limited, skipped for {} s more",
                        provider.cooldown_s.unwrap_or(0)
                    ),
                    Some("wait, or add another provider to the cascade".into()),
                ),
                (EntryState::Ok, Some(error)) => Check::new(
                    part,
                    Level::Failed,
                    format!("{endpoint}: {error}"),
                    Some("start the model server, or fix base_url and model under [[llm.providers]]".into()),
                ),
                (EntryState::Ok, None) => Check::new(part, Level::Ok, format!("{endpoint} answers the daemon"), None),
            }
        })
        .collect()
}

fn store_check(config: &Config, daemon_status: Option<&serde_json::Value>) -> Check {
    if let Some(status) = daemon_status {
        let store = &status["store"];
        return Check::new(
            "store",
            Level::Ok,
            format!(
                "open in the daemon: {} bytes, {} pending, {} undelivered",
                store["size_bytes"], store["pending"], store["outbox"]
            ),
            None,
        );
    }
    let dir = config.store_dir();
    if !dir.exists() {
        return Check::new(
            "store",
            Level::Ok,
            format!("{} will be created at first start", dir.display()),
            None,
        );
    }
    // Opening the store takes it: only while no daemon holds the data directory.
    let _lock = match DataDirLock::acquire(&config.data_dir()) {
        Ok(lock) => lock,
        Err(DataDirError::InUse { .. }) => {
            let detail = format!("{} is in use by a running daemon", dir.display());
            return Check::new("store", Level::Ok, detail, None);
        }
        Err(error) => return Check::new("store", Level::Failed, error.to_string(), None),
    };
    match Store::open(&dir, &config.store) {
        Ok(store) => Check::new(
            "store",
            Level::Ok,
            format!(
                "{}: {} pending, {} undelivered",
                dir.display(),
                store.pending_count(),
                store.outbox_len()
            ),
            None,
        ),
        Err(error) => Check::new(
            "store",
            Level::Failed,
            error.to_string(),
            Some(format!(
                "if no daemon is running, restore a backup from {}",
                config.backup_dir().display()
            )),
        ),
    }
}

/// The checks the daemon runs at start, in the background: each provider,
/// logged as one line. The daemon runs whatever they say ("fail open"): a
/// provider that is down now may be up by the time someone writes.
pub async fn log_startup_checks(providers: Vec<Arc<dyn ChatModel>>) {
    for provider in providers {
        let check = provider_check(provider.as_ref()).await;
        match check.level {
            Level::Ok => tracing::info!(check = %check, "startup check"),
            Level::Degraded | Level::Failed => tracing::warn!(check = %check, "startup check: degraded start"),
        }
    }
}

async fn provider_check(provider: &dyn ChatModel) -> Check {
    let part = format!("model {}", provider.name());
    match provider.probe().await {
        Ok(()) => Check::new(part, Level::Ok, format!("{} answers", provider.endpoint()), None),
        Err(error) => {
            let fix = match &error {
                LlmError::Unauthorized { .. } => "set the provider's API key (api_key_env or api_key_file)",
                LlmError::Unreachable { .. } | LlmError::Timeout => {
                    "start the model server, or fix base_url under [[llm.providers]]"
                }
                LlmError::RateLimited { .. } => "wait, or add another provider to the cascade",
                _ => "check base_url and model under [[llm.providers]]",
            };
            Check::new(
                part,
                Level::Failed,
                format!("{}: {error}", provider.endpoint()),
                Some(fix.into()),
            )
        }
    }
}
