//! Which settings a reload applies while the daemon runs, and which wait
//! for a restart.
//!
//! The live settings are named once, as key paths: the core's in [`LIVE`],
//! each gateway's by its component (`GatewayComponent::live_keys`). A
//! reloaded file is compared with the running configuration key by key:
//! what differs under a live path is taken (the rest of the running
//! configuration is kept as it is, so the daemon never runs half of a
//! setting it cannot apply), and what differs elsewhere is named as
//! needing a restart.

use serde_json::{Map, Value};

use crate::config::Config;

/// The core's settings a reload applies: who may approve everywhere, the
/// model providers, the system prompt, the skills' gates and rules, and the
/// configured loops. A path covers everything below it. Who may talk and
/// approve on each gateway the gateways' components add.
pub const LIVE: &[&str] = &[
    "approvals.global_approvers",
    "llm",
    "pipeline.system_prompt",
    "skills",
    "tools.require_approval",
    "loops.entries",
];

/// Where the tools that run are configured (which tools, which servers).
const TOOLS: &[&str] = &["tools", "mcp"];

/// The gates on the tools: while a change to the tools waits for a
/// restart, so do they, so that a gate is never dropped from a tool that
/// runs on until then.
const GATES: &[&str] = &["tools.require_approval", "skills"];

/// The live paths for a reload from `running` that changes `paths`.
fn live_paths(running: &Config, paths: &[String]) -> Vec<&'static str> {
    let tools_wait = paths
        .iter()
        .any(|path| TOOLS.iter().any(|t| covers(t, path)) && !GATES.iter().any(|g| covers(g, path)));
    let gateways = crate::gateways::live_keys(running);
    (LIVE.iter().copied())
        .filter(|path| !(tools_wait && GATES.contains(path)))
        .chain(gateways)
        .collect()
}

/// Whether the key path `prefix` covers `path` (is it, or is above it).
fn covers(prefix: &str, path: &str) -> bool {
    path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('.'))
}

/// What a reloaded file changes, compared with the running configuration.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Changed settings that apply now (key paths, sorted).
    pub live: Vec<String>,
    /// Changed settings that apply only after a restart.
    pub need_restart: Vec<String>,
}

impl Changes {
    /// Whether the file changes nothing.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.need_restart.is_empty()
    }
}

/// Why the running configuration could not take a reloaded file's live
/// settings (a configuration that does not survive its own serialisation,
/// which a test rules out).
#[derive(Debug, thiserror::Error)]
#[error("cannot merge the reloaded settings: {0}")]
pub struct MergeError(#[from] serde_json::Error);

/// The settings that differ between `running` and `reloaded`, each as the
/// deepest key path that differs (a list counts as one setting).
pub fn changes(running: &Config, reloaded: &Config) -> Result<Changes, MergeError> {
    let paths = differing_paths(running, reloaded)?;
    let live_paths = live_paths(running, &paths);
    let (live, need_restart) = paths
        .into_iter()
        .partition(|path| live_paths.iter().any(|live| covers(live, path)));
    Ok(Changes { live, need_restart })
}

fn differing_paths(running: &Config, reloaded: &Config) -> Result<Vec<String>, MergeError> {
    let (before, after) = (serde_json::to_value(running)?, serde_json::to_value(reloaded)?);
    let mut paths = Vec::new();
    differing(&before, &after, String::new(), &mut paths);
    paths.sort();
    Ok(paths)
}

/// `running` with every live setting taken from `reloaded`.
pub fn merged(running: &Config, reloaded: &Config) -> Result<Config, MergeError> {
    let paths = differing_paths(running, reloaded)?;
    let mut merged = serde_json::to_value(running)?;
    let source = serde_json::to_value(reloaded)?;
    for path in live_paths(running, &paths) {
        let keys: Vec<&str> = path.split('.').collect();
        let value = lookup(&source, &keys).cloned().unwrap_or(Value::Null);
        place(&mut merged, &keys, value);
    }
    Ok(serde_json::from_value(merged)?)
}

fn differing(before: &Value, after: &Value, path: String, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let keys = b.keys().chain(a.keys().filter(|key| !b.contains_key(*key)));
            for key in keys {
                let (b, a) = (b.get(key).unwrap_or(&Value::Null), a.get(key).unwrap_or(&Value::Null));
                let below = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                differing(b, a, below, out);
            }
        }
        (b, a) if b != a => out.push(path),
        _ => {}
    }
}

fn lookup<'v>(value: &'v Value, keys: &[&str]) -> Option<&'v Value> {
    keys.iter().try_fold(value, |value, key| value.get(key))
}

fn place(value: &mut Value, keys: &[&str], new: Value) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut at = value;
    for key in parents {
        let Value::Object(map) = at else {
            return;
        };
        at = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(map) = at {
        if new.is_null() {
            map.remove(*last);
        } else {
            map.insert(last.to_string(), new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoopEntry, ProviderConfig};

    fn reloaded(change: impl FnOnce(&mut Config)) -> Config {
        let mut config = Config::default();
        change(&mut config);
        config
    }

    #[test]
    fn the_configuration_survives_the_round_trip_the_merge_takes() {
        let mut config = Config::default();
        config.telegram.allowed_users = vec![42];
        config.llm.providers.push(ProviderConfig::default());
        config.loops.entries.push(LoopEntry::default());
        assert_eq!(merged(&config, &config).unwrap(), config);
    }

    #[test]
    fn live_settings_are_taken_and_named() {
        let running = Config::default();
        let new = reloaded(|c| {
            c.telegram.allowed_users = vec![42, 7];
            c.pipeline.system_prompt = "Be brief.".into();
            c.skills.tool_calls_per_minute = 3;
            c.tools.require_approval = vec!["shell".into()];
        });
        let changes = changes(&running, &new).unwrap();
        assert_eq!(
            changes.live,
            [
                "pipeline.system_prompt",
                "skills.tool_calls_per_minute",
                "telegram.allowed_users",
                "tools.require_approval"
            ]
        );
        assert!(changes.need_restart.is_empty());
        assert_eq!(merged(&running, &new).unwrap(), new);
    }

    #[test]
    fn other_settings_are_named_and_kept_as_they_run() {
        let running = Config::default();
        let new = reloaded(|c| {
            c.pipeline.max_depth += 1;
            c.telegram.enabled = true;
            c.telegram.allowed_users = vec![42];
            c.data_dir = "/elsewhere".into();
        });
        let changes = changes(&running, &new).unwrap();
        assert_eq!(changes.live, ["telegram.allowed_users"]);
        assert_eq!(
            changes.need_restart,
            ["data_dir", "pipeline.max_depth", "telegram.enabled"]
        );
        let merged = merged(&running, &new).unwrap();
        assert_eq!(merged.telegram.allowed_users, [42], "the live one is taken");
        assert!(!merged.telegram.enabled, "the others run on as before");
        assert_eq!(merged.pipeline.max_depth, running.pipeline.max_depth);
        assert_eq!(merged.data_dir, running.data_dir);
    }

    #[test]
    fn an_optional_live_setting_removed_from_the_file_is_removed() {
        let running = reloaded(|c| c.telegram.approvers = Some(vec![42]));
        let new = Config::default();
        assert_eq!(changes(&running, &new).unwrap().live, ["telegram.approvers"]);
        assert_eq!(merged(&running, &new).unwrap().telegram.approvers, None);
    }

    #[test]
    fn the_same_file_changes_nothing() {
        assert!(changes(&Config::default(), &Config::default()).unwrap().is_empty());
    }

    #[test]
    fn a_path_covers_what_is_below_it_only() {
        assert!(covers("llm", "llm.providers"));
        assert!(covers("skills", "skills"));
        assert!(!covers("llm", "llmx"));
        assert!(!covers("telegram.allowed_users", "telegram.allowed_users_extra"));
        assert!(!covers("telegram", "tele"));
    }

    #[test]
    fn gates_wait_with_a_change_to_the_tools_they_gate() {
        let running = Config::default();
        // The shell changed (waits for a restart) and its gate gone: the
        // gate stays while the shell runs on as it is.
        let new = reloaded(|c| {
            c.tools.shell.timeout_s += 1;
            c.tools.require_approval.retain(|tool| tool != "shell");
            c.telegram.allowed_users = vec![42];
        });
        let changes = changes(&running, &new).unwrap();
        assert_eq!(changes.live, ["telegram.allowed_users"]);
        assert_eq!(
            changes.need_restart,
            ["tools.require_approval", "tools.shell.timeout_s"]
        );
        let merged = merged(&running, &new).unwrap();
        assert_eq!(merged.tools.require_approval, running.tools.require_approval);
        // A gate changed alone applies at once.
        let new = reloaded(|c| c.tools.require_approval.push("read_file".into()));
        assert_eq!(super::changes(&running, &new).unwrap().live, ["tools.require_approval"]);
    }

    #[test]
    fn signal_lists_wait_for_a_restart_on_the_persons_own_account() {
        let running = reloaded(|c| c.signal.note_to_self = true);
        let new = reloaded(|c| {
            c.signal.note_to_self = true;
            c.signal.allowed_senders = vec!["+15550000002".into()];
            c.signal.approvers = Some(vec!["+15550000002".into()]);
        });
        let changes = changes(&running, &new).unwrap();
        assert_eq!(changes.need_restart, ["signal.allowed_senders"]);
        assert_eq!(changes.live, ["signal.approvers"]);
        let merged = merged(&running, &new).unwrap();
        assert!(
            merged.signal.allowed_senders.is_empty(),
            "the gateway's filter and the core agree"
        );
        // On a dedicated number the core alone decides: live.
        let changes = super::changes(
            &Config::default(),
            &reloaded(|c| c.signal.allowed_senders = vec!["+1555".into()]),
        );
        assert_eq!(changes.unwrap().live, ["signal.allowed_senders"]);
    }
}
