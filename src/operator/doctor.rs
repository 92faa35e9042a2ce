//! `passepartout doctor`: one line per part — config, each gateway (its
//! component's own check), store, each model provider, the transcription
//! server when one is set up, the sandbox of the tools' processes, each MCP
//! tool server — saying ok, degraded
//! or failed, and what to do about it. The daemon runs the provider checks at start and logs them;
//! it starts anyway ("fail open").

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::engine::pipeline::cascade::EntryState;
pub use crate::foundation::checkup::{Check, Level};
use crate::foundation::data_dir::{DataDirError, DataDirLock};
use crate::model::llm::{ChatModel, LlmError};
use crate::safety::mcp::Phase;
use crate::store::Store;

/// Every check for `config`, in order: the first gateway's (the local
/// socket, the way in to a running daemon), the store, the other gateways',
/// each model provider (as the running daemon sees them, when a gateway check
/// reached it). The store is checked after every gateway, since what it says
/// depends on whether a daemon holds it, but it is listed second. MCP
/// servers no daemon runs are started confined as the daemon would confine
/// them, `config_file`'s directory kept out.
pub async fn run(config: &Config, config_file: Option<&Path>, providers: &[Arc<dyn ChatModel>]) -> Vec<Check> {
    let (mut checks, daemon) = gateway_checks(config).await;
    checks.insert(checks.len().min(1), store_check(config, daemon.as_ref()));
    match &daemon {
        Some(status) => {
            checks.extend(daemon_gateway_checks(status));
            checks.extend(daemon_provider_checks(status));
        }
        None => {
            for provider in providers {
                checks.push(provider_check(provider.as_ref()).await);
            }
        }
    }
    checks.extend(transcription_check(config).await);
    // Confined as the daemon would confine: the configuration's directory
    // (its secret files) and the data directory kept out; the control groups
    // it would use looked at, not claimed.
    let secrets = crate::gateways::secret_places(config, &[]);
    let sandbox = crate::safety::sandbox::Policy::for_tools(
        config,
        &secrets,
        config_file,
        crate::safety::sandbox::Support::probe(),
    )
    .with_cgroups(crate::safety::sandbox::Cgroups::find(false));
    checks.push(sandbox.check(&config.tools.sandbox));
    match &daemon {
        Some(status) => checks.extend(daemon_mcp_checks(status)),
        None => {
            // Homes that go with the probe: one made in the data directory
            // by whoever runs `doctor` (root, under sudo) could be closed
            // to the daemon's own user afterwards.
            match tempfile::Builder::new().prefix("passepartout-doctor-").tempdir() {
                Ok(homes) => {
                    for server in config.mcp.enabled() {
                        checks.push(mcp_check(server, homes.path(), &sandbox).await);
                    }
                }
                Err(error) => checks.extend(config.mcp.enabled().map(|server| {
                    let detail = format!("cannot make a temporary home to start it in: {error}");
                    Check::new(format!("mcp {}", server.name), Level::Failed, detail, None)
                })),
            }
        }
    }
    checks
}

/// The checks that still mean something when the configuration file does
/// not load and `config` holds only its data directory and socket (the
/// defaults besides): the gateways' (of the defaults, only the socket's,
/// which reaches the running daemon that read the file before), the store,
/// and the models and tool servers as that daemon sees them. The gateways
/// and models of a file that does not load are not guessed at.
pub async fn run_salvaged(config: &Config) -> Vec<Check> {
    let (mut checks, daemon) = gateway_checks(config).await;
    checks.push(store_check(config, daemon.as_ref()));
    if let Some(status) = &daemon {
        checks.extend(daemon_gateway_checks(status));
        checks.extend(daemon_provider_checks(status));
        checks.extend(daemon_mcp_checks(status));
    }
    checks
}

/// Each gateway's check (one that is off says nothing, or that it is off),
/// and the running daemon's status, when a check reached it.
async fn gateway_checks(config: &Config) -> (Vec<Check>, Option<serde_json::Value>) {
    let mut checks = Vec::new();
    let mut daemon = None;
    for component in crate::gateways::components(config) {
        if let Some(checked) = component.check().await {
            checks.push(checked.check);
            daemon = daemon.or(checked.daemon);
        }
    }
    (checks, daemon)
}

/// Each gateway the running daemon has down (one that could not start,
/// as a web port another program holds): the daemon runs without it.
fn daemon_gateway_checks(status: &serde_json::Value) -> Vec<Check> {
    status["gateways"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|gateway| gateway["state"] == "down")
        .map(|gateway| {
            let name = gateway["name"].as_str().unwrap_or("?");
            let detail = gateway["detail"].as_str().unwrap_or("no reason given");
            Check::new(
                format!("{name} in the daemon"),
                Level::Failed,
                format!("down: {detail}"),
                Some("the daemon runs without it and tries again; see its log".into()),
            )
        })
        .collect()
}

/// What to do about a tool server that is down.
const MCP_FIX: &str = "check the server's command or url under [[mcp.servers]], and its log lines";

/// Each tool server as the running daemon sees it.
fn daemon_mcp_checks(status: &serde_json::Value) -> Vec<Check> {
    let servers: Vec<crate::safety::mcp::ServerStatus> =
        serde_json::from_value(status["mcp"].clone()).unwrap_or_default();
    servers
        .into_iter()
        .map(|server| {
            let part = format!("mcp {}", server.name);
            let error = server
                .last_error
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default();
            match server.state {
                Phase::Connected => Check::new(
                    part,
                    Level::Ok,
                    format!("connected, {} tools{error}", server.tools),
                    None,
                ),
                Phase::Disabled => Check::new(part, Level::Ok, "disabled (enabled = false)", None),
                Phase::Starting => Check::new(part, Level::Degraded, "still starting", None),
                Phase::Failed => Check::new(part, Level::Failed, format!("failed{error}"), Some(MCP_FIX.into())),
            }
        })
        .collect()
}

/// A tool server started (or reached) here, its tools listed, and stopped.
async fn mcp_check(
    server: &crate::config::McpServerConfig,
    homes: &Path,
    sandbox: &crate::safety::sandbox::Policy,
) -> Check {
    let part = format!("mcp {}", server.name);
    match crate::safety::mcp::probe(server, homes, sandbox).await {
        Ok(tools) => Check::new(part, Level::Ok, format!("answers, {tools} tools"), None),
        Err(error) => Check::new(part, Level::Failed, error, Some(MCP_FIX.into())),
    }
}

/// The transcription server's line, when `[transcription]` sets one up.
async fn transcription_check(config: &Config) -> Option<Check> {
    let fix = "start the transcription server, or fix [transcription] base_url";
    let transcriber = match crate::model::media::transcriber(config) {
        Ok(transcriber) => transcriber?,
        Err(error) => {
            return Some(Check::new(
                "transcription",
                Level::Failed,
                error.to_string(),
                Some(fix.into()),
            ));
        }
    };
    let endpoint = transcriber.base_url();
    Some(match transcriber.probe().await {
        Ok(()) => Check::new(
            "transcription",
            Level::Ok,
            format!("{endpoint} answers ({})", transcriber.model()),
            None,
        ),
        Err(error @ crate::model::media::TranscribeError::Refused { .. }) => Check::new(
            "transcription",
            Level::Failed,
            format!("{endpoint}: {error}"),
            Some("set the server's key with [transcription] api_key_env or api_key_file".into()),
        ),
        Err(error) => Check::new(
            "transcription",
            Level::Failed,
            format!("{endpoint}: {error}"),
            Some(fix.into()),
        ),
    })
}

/// The providers as the running daemon sees them after probing them again.
fn daemon_provider_checks(status: &serde_json::Value) -> Vec<Check> {
    crate::operator::status::providers(status)
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
                (EntryState::Unreachable | EntryState::Ok, Some(error)) => Check::new(
                    part,
                    Level::Failed,
                    format!("{endpoint}: {error}"),
                    Some("start the model server, or fix base_url and model under [[llm.providers]]".into()),
                ),
                (EntryState::Unreachable, None) => Check::new(
                    part,
                    Level::Failed,
                    format!("{endpoint}: unreachable"),
                    Some("start the model server, or fix base_url and model under [[llm.providers]]".into()),
                ),
                (EntryState::Ok, None) => Check::new(part, Level::Ok, format!("{endpoint} answers the daemon"), None),
            }
        })
        .collect()
}

/// Below this many bytes free beside the store, sled cannot start its next
/// log segment: the store is as good as failed.
const SCARCE_BYTES: u64 = 1024 * 1024;

/// What to do when the store failed for want of space (or an I/O error).
const FREE_SPACE_FIX: &str =
    "free space on the store's disk and restart the daemon: every message it acknowledged is answered then";

/// The store's check: the daemon's view of it when a daemon answered, else
/// the store opened here; failed either way when its disk is full.
fn store_check(config: &Config, daemon_status: Option<&serde_json::Value>) -> Check {
    let check = store_state(config, daemon_status);
    if check.level == Level::Failed {
        return check;
    }
    match free_bytes(&config.data_dir()) {
        Some(free) if free < SCARCE_BYTES => Check::new(
            "store",
            Level::Failed,
            format!("{}; only {free} bytes free on its disk", check.detail),
            Some(FREE_SPACE_FIX.into()),
        ),
        _ => check,
    }
}

/// Bytes an unprivileged writer may still use on the file system holding
/// `dir` (or its nearest existing parent); none when that cannot be told.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let existing = dir.ancestors().find(|path| path.exists())?;
    let stats = rustix::fs::statvfs(existing).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

fn store_state(config: &Config, daemon_status: Option<&serde_json::Value>) -> Check {
    if let Some(status) = daemon_status {
        let store = &status["store"];
        if store["failed"].as_bool() == Some(true) {
            let error = store["error"].as_str().unwrap_or("a flush failed");
            return Check::new(
                "store",
                Level::Failed,
                format!("failed in the daemon, which acknowledges nothing more: {error}"),
                Some(FREE_SPACE_FIX.into()),
            );
        }
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

/// One provider's line: whether it answers a probe, and what to do if not.
pub(crate) async fn provider_check(provider: &dyn ChatModel) -> Check {
    let part = format!("model {}", provider.name());
    match provider.probe().await {
        Ok(()) => Check::new(part, Level::Ok, format!("{} answers", provider.endpoint()), None),
        Err(error) => Check::new(
            part,
            Level::Failed,
            format!("{}: {error}", provider.endpoint()),
            Some(provider_fix(&error).into()),
        ),
    }
}

/// What to do about a provider that failed with `error`.
pub(crate) fn provider_fix(error: &LlmError) -> &'static str {
    match error {
        LlmError::Unauthorized { .. } => "set the provider's API key (api_key_env or api_key_file)",
        LlmError::Unreachable { .. } | LlmError::Timeout => {
            "start the model server, or fix base_url under [[llm.providers]]"
        }
        LlmError::RateLimited { .. } => "wait, or add another provider to the cascade",
        _ => "check base_url and model under [[llm.providers]]",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::media::fake_transcriber::FakeTranscriber;

    #[test]
    fn a_store_the_daemon_marked_failed_fails_doctor_with_its_error() {
        let status = json!({ "store": { "failed": true, "error": "store I/O failed: No space left on device" } });
        let check = store_state(&Config::default(), Some(&status));
        assert_eq!(check.level, Level::Failed);
        assert!(check.detail.contains("No space left on device"), "{check}");
        assert!(check.fix.is_some_and(|fix| fix.contains("free space")));
    }

    #[test]
    fn a_healthy_store_in_the_daemon_is_ok() {
        let status = json!({ "store": { "failed": false, "size_bytes": 1, "pending": 0, "outbox": 0 } });
        assert_eq!(store_state(&Config::default(), Some(&status)).level, Level::Ok);
    }

    #[tokio::test]
    async fn the_transcription_server_is_checked_only_when_set_up() {
        assert!(transcription_check(&Config::default()).await.is_none());
        let fake = FakeTranscriber::start().await;
        fake.require_key("sk-right");
        let mut config = Config::default();
        config.transcription.base_url = Some(fake.base_url());
        let refused = transcription_check(&config).await.unwrap();
        assert_eq!(refused.level, Level::Failed, "{refused}");
        assert!(refused.fix.as_deref().is_some_and(|fix| fix.contains("api_key_env")));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key"), "sk-right").unwrap();
        config.transcription.api_key_file = Some(dir.path().join("key"));
        let ok = transcription_check(&config).await.unwrap();
        assert_eq!(ok.level, Level::Ok, "{ok}");
        assert!(!ok.to_string().contains("sk-right"));
        config.transcription.base_url = Some(FakeTranscriber::dead_url().await);
        let down = transcription_check(&config).await.unwrap();
        assert_eq!(down.level, Level::Failed);
        assert!(down.detail.contains("could not be reached"), "{down}");
    }

    #[test]
    fn free_space_is_read_from_the_nearest_existing_parent() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(&dir.path().join("not").join("yet")).is_some());
    }
}
