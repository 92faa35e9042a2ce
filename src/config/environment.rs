//! Settings from the environment: `PASSEPARTOUT_SECTION__KEY=value` sets
//! `section.key`. A list setting takes `a,b,c` or a JSON array (`[1,2]`,
//! `["a","b"]`), and a list of tables (`llm.providers`, `mcp.servers`) a
//! JSON array of objects; any other value is text, read as the setting's
//! type. `PASSEPARTOUT_CONFIG` names the file to read and is not a setting.
//! Each value is marked as coming from the environment, so a problem with
//! it names the variable.

use std::collections::HashMap;

use config::{ConfigError, Map, Source, Value, ValueKind};

use super::Config;

/// The prefix of every variable read.
const PREFIX: &str = "PASSEPARTOUT_";

/// The variable that names the configuration file.
pub const CONFIG_FILE_VAR: &str = "PASSEPARTOUT_CONFIG";

/// How a value set by a variable is marked.
pub const FROM_ENVIRONMENT: &str = "the environment";

/// The `PASSEPARTOUT_…` settings of an environment.
#[derive(Clone, Debug)]
pub struct EnvSource {
    /// The variables, by name; `None` reads the process's at collection.
    vars: Option<HashMap<String, String>>,
}

impl EnvSource {
    /// Settings from `vars`, or from the process's environment when `None`.
    pub fn new(vars: Option<HashMap<String, String>>) -> Self {
        Self { vars }
    }
}

impl Source for EnvSource {
    fn clone_into_box(&self) -> Box<dyn Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<Map<String, Value>, ConfigError> {
        let vars: Vec<(String, String)> = match &self.vars {
            Some(vars) => vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => std::env::vars().collect(),
        };
        let lists = ListKeys::of_defaults();
        let origin = FROM_ENVIRONMENT.to_owned();
        let mut settings = Map::new();
        for (name, text) in vars {
            let Some(key) = setting_key(&name) else {
                continue;
            };
            let kind = match parse_list(&text, lists.is_list(&key)) {
                Some(items) => ValueKind::Array(items.into_iter().map(|item| from_json(item, &origin)).collect()),
                None => ValueKind::String(text),
            };
            settings.insert(key, Value::new(Some(&origin), kind));
        }
        Ok(settings)
    }
}

/// The setting a variable sets (`pipeline.max_depth`), if it sets one.
fn setting_key(name: &str) -> Option<String> {
    if name == CONFIG_FILE_VAR {
        return None;
    }
    let rest = name.strip_prefix(PREFIX)?;
    let parts: Vec<String> = rest.split("__").map(str::to_lowercase).collect();
    if parts.iter().any(String::is_empty) {
        return None;
    }
    Some(parts.join("."))
}

/// `text` as a list: a JSON array always; for a list setting, otherwise
/// its comma-separated items, trimmed (none for empty text).
fn parse_list(text: &str, is_list: bool) -> Option<Vec<serde_json::Value>> {
    let trimmed = text.trim();
    if trimmed.starts_with('[')
        && let Ok(serde_json::Value::Array(items)) = serde_json::from_str(trimmed)
    {
        return Some(items);
    }
    if !is_list {
        return None;
    }
    if trimmed.is_empty() {
        return Some(Vec::new());
    }
    Some(
        trimmed
            .split(',')
            .map(|item| serde_json::Value::String(item.trim().to_owned()))
            .collect(),
    )
}

/// A JSON value as a settings value, marked as from the environment.
fn from_json(value: serde_json::Value, origin: &String) -> Value {
    let kind = match value {
        serde_json::Value::Null => ValueKind::Nil,
        serde_json::Value::Bool(b) => ValueKind::Boolean(b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => ValueKind::I64(i),
            (None, Some(u)) => ValueKind::U64(u),
            _ => ValueKind::Float(n.as_f64().unwrap_or_default()),
        },
        serde_json::Value::String(s) => ValueKind::String(s),
        serde_json::Value::Array(items) => ValueKind::Array(items.into_iter().map(|v| from_json(v, origin)).collect()),
        serde_json::Value::Object(fields) => ValueKind::Table(
            fields
                .into_iter()
                .map(|(key, value)| (key, from_json(value, origin)))
                .collect(),
        ),
    };
    Value::new(Some(origin), kind)
}

/// Which settings are lists, read off the defaults.
struct ListKeys(serde_json::Value);

impl ListKeys {
    fn of_defaults() -> Self {
        Self(serde_json::to_value(Config::default()).unwrap_or_default())
    }

    fn is_list(&self, key: &str) -> bool {
        let mut value = &self.0;
        for part in key.split('.') {
            match value.get(part) {
                Some(inner) => value = inner,
                None => return false,
            }
        }
        value.is_array()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(pairs: &[(&str, &str)]) -> Map<String, Value> {
        let vars = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        EnvSource::new(Some(vars)).collect().unwrap()
    }

    #[test]
    fn a_list_setting_takes_commas_or_json_and_text_stays_text() {
        let settings = collect(&[
            ("PASSEPARTOUT_TELEGRAM__ALLOWED_USERS", "123, 456"),
            ("PASSEPARTOUT_SIGNAL__ALLOWED_SENDERS", r#"["+1555", "uuid-1"]"#),
            ("PASSEPARTOUT_PIPELINE__SYSTEM_PROMPT", "Be brief, be kind."),
            ("PASSEPARTOUT_CONFIG", "/etc/passepartout.toml"),
            ("HOME", "/root"),
        ]);
        assert_eq!(settings.len(), 3, "{settings:?}");
        let users = settings["telegram.allowed_users"].clone().into_array().unwrap();
        let users: Vec<String> = users.into_iter().map(|v| v.into_string().unwrap()).collect();
        assert_eq!(users, ["123", "456"]);
        assert_eq!(
            settings["signal.allowed_senders"].clone().into_array().unwrap().len(),
            2
        );
        assert_eq!(
            settings["pipeline.system_prompt"].clone().into_string().unwrap(),
            "Be brief, be kind."
        );
        assert_eq!(settings["pipeline.system_prompt"].origin(), Some(FROM_ENVIRONMENT));
    }

    #[test]
    fn names_that_set_nothing_are_skipped() {
        assert_eq!(
            setting_key("PASSEPARTOUT_PIPELINE__MAX_DEPTH").as_deref(),
            Some("pipeline.max_depth")
        );
        assert_eq!(setting_key("PASSEPARTOUT_CONFIG"), None);
        assert_eq!(setting_key("PASSEPARTOUT_"), None);
        assert_eq!(setting_key("PASSEPARTOUT_A____B"), None);
        assert_eq!(setting_key("OTHER_THING"), None);
    }
}
