//! A server's tools as the model sees them: each named `SERVER__TOOL` within
//! what the model APIs accept (`^[a-zA-Z0-9_-]{1,64}$`), with the server's own
//! JSON input schema, which must describe an object. A name with other
//! characters is mapped (each one becomes `_`); a name still too long, a
//! name two tools map to, or a schema that is not an object's is skipped, and
//! the log says which and why.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::config::{MAX_TOOL_NAME_CHARS, MCP_SEPARATOR};
use crate::model::llm::ToolSpec;

/// One of a server's tools, ready to offer.
#[derive(Clone, Debug, PartialEq)]
pub struct Offered {
    /// The server's own name for the tool, used in its calls.
    pub remote: String,
    /// What the model sees.
    pub spec: ToolSpec,
}

/// Why a server's tool is not offered.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skipped {
    #[error("its name {0:?} is longer than {MAX_TOOL_NAME_CHARS} characters with the server's prefix")]
    TooLong(String),
    #[error("its name maps to {0:?}, as another tool's does")]
    Duplicate(String),
    #[error("its input schema is not an object's")]
    NotAnObject,
}

/// The tools of `server` worth offering, by the name the model sees, with
/// what was skipped and why (for the log).
pub fn offer(server: &str, tools: &[rmcp::model::Tool]) -> (BTreeMap<String, Offered>, Vec<(String, Skipped)>) {
    let mut offered = BTreeMap::new();
    let mut skipped = Vec::new();
    for tool in tools {
        match offer_one(server, tool) {
            Ok(one) if offered.contains_key(&one.spec.name) => {
                skipped.push((tool.name.to_string(), Skipped::Duplicate(one.spec.name)));
            }
            Ok(one) => {
                offered.insert(one.spec.name.clone(), one);
            }
            Err(why) => skipped.push((tool.name.to_string(), why)),
        }
    }
    (offered, skipped)
}

fn offer_one(server: &str, tool: &rmcp::model::Tool) -> Result<Offered, Skipped> {
    let name = model_name(server, &tool.name)?;
    let parameters = object_schema(&tool.input_schema).ok_or(Skipped::NotAnObject)?;
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    Ok(Offered {
        remote: tool.name.to_string(),
        spec: ToolSpec {
            name,
            description: format!("{description} (from the MCP server {server:?})")
                .trim_start()
                .to_owned(),
            parameters,
        },
    })
}

/// `SERVER__TOOL`, each character the model APIs refuse turned into `_`.
pub fn model_name(server: &str, tool: &str) -> Result<String, Skipped> {
    let mapped: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{server}{MCP_SEPARATOR}{mapped}");
    if tool.is_empty() || name.len() > MAX_TOOL_NAME_CHARS {
        return Err(Skipped::TooLong(name));
    }
    Ok(name)
}

/// The schema as the model APIs take it: an object's, with `properties`
/// (an empty set when the server gave none); `None` for any other.
fn object_schema(schema: &Map<String, Value>) -> Option<Value> {
    let mut schema = schema.clone();
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        None if schema.get("properties").is_some_and(Value::is_object) => {
            schema.insert("type".into(), Value::from("object"));
        }
        _ => return None,
    }
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema.insert("properties".into(), Value::Object(Map::new()));
    }
    Some(Value::Object(schema))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: Value) -> rmcp::model::Tool {
        let Value::Object(schema) = schema else {
            panic!("an object")
        };
        rmcp::model::Tool::new(name.to_owned(), "does things", Arc::new(schema))
    }

    #[test]
    fn names_are_prefixed_and_mapped_and_bad_tools_skipped() {
        let tools = [
            tool(
                "echo",
                json!({"type": "object", "properties": {"message": {"type": "string"}}}),
            ),
            tool("get.time", json!({"properties": {}})),
            tool("get_time", json!({"type": "object"})),
            tool("list", json!({"type": "array"})),
            tool(&"x".repeat(60), json!({"type": "object"})),
        ];
        let (offered, skipped) = offer("srv", &tools);
        assert_eq!(offered.keys().collect::<Vec<_>>(), ["srv__echo", "srv__get_time"]);
        assert_eq!(offered["srv__get_time"].remote, "get.time");
        assert_eq!(
            offered["srv__get_time"].spec.parameters,
            json!({"type": "object", "properties": {}})
        );
        assert!(
            offered["srv__echo"]
                .spec
                .description
                .starts_with("does things (from the MCP server \"srv\")")
        );
        assert_eq!(
            skipped,
            [
                ("get_time".to_owned(), Skipped::Duplicate("srv__get_time".into())),
                ("list".to_owned(), Skipped::NotAnObject),
                ("x".repeat(60), Skipped::TooLong(format!("srv__{}", "x".repeat(60)))),
            ]
        );
    }
}
