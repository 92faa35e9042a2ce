//! `remember`, `recall` and `forget_fact`: the model's hands on the person's
//! memory ([`crate::model::memory`]). Writes are staged in the turn and committed
//! with it; the facts belong to the person who sent the message.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::model::llm::ToolSpec;
use crate::model::memory::{MemoryError, relevant};

/// Most facts `recall` lists.
const RECALL_LIMIT: usize = 20;

fn failed(error: MemoryError) -> ToolError {
    match error {
        MemoryError::Store(error) => ToolError::Failed(format!("memory is unavailable: {error}")),
        other => ToolError::InvalidArguments(other.to_string()),
    }
}

/// `remember {fact}`.
pub struct Remember;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    fact: String,
}

#[async_trait]
impl Tool for Remember {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remember".into(),
            description: "Keep a fact about the person for later conversations (a preference, a name, a date). One short sentence per fact.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"fact": {"type": "string", "description": "The fact, as one short sentence."}},
                "required": ["fact"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let args: RememberArgs = parse_arguments(arguments)?;
        let fact = context.memory.remember(&args.fact).map_err(failed)?;
        Ok(format!("remembered as fact {}", fact.id))
    }
}

/// `recall {query?}`.
pub struct Recall;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    #[serde(default)]
    query: String,
}

#[async_trait]
impl Tool for Recall {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "recall".into(),
            description: "List the facts kept about the person, the most related to the query first.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words to look for; empty lists the newest facts."}},
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let args: RecallArgs = parse_arguments(arguments)?;
        let facts = context.memory.facts().map_err(failed)?;
        if facts.is_empty() {
            return Ok("no facts kept about this person".into());
        }
        let total = facts.len();
        let picked = relevant(facts, &args.query, RECALL_LIMIT);
        let mut out: Vec<String> = picked
            .iter()
            .map(|fact| format!("{}: {}", fact.id, fact.text))
            .collect();
        if total > picked.len() {
            out.push(format!("({} more not shown; narrow the query)", total - picked.len()));
        }
        Ok(out.join("\n"))
    }
}

/// `forget_fact {id}`.
pub struct ForgetFact;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    id: u64,
}

#[async_trait]
impl Tool for ForgetFact {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "forget_fact".into(),
            description: "Forget one kept fact, by the id that recall shows.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 0}},
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let args: ForgetArgs = parse_arguments(arguments)?;
        let fact = context.memory.forget(args.id).map_err(failed)?;
        Ok(format!("forgot fact {}: {}", fact.id, fact.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::tools::testing;

    #[tokio::test]
    async fn remember_recall_forget() {
        let context = testing::context();
        let out = Remember
            .call(&context, json!({"fact": "The cat is Miso"}))
            .await
            .unwrap();
        let id: u64 = out.rsplit(' ').next().unwrap().parse().unwrap();
        Remember.call(&context, json!({"fact": "Tea, no sugar"})).await.unwrap();
        let recalled = Recall.call(&context, json!({"query": "cat"})).await.unwrap();
        assert!(recalled.starts_with(&format!("{id}: The cat is Miso")), "{recalled}");
        ForgetFact.call(&context, json!({"id": id})).await.unwrap();
        let recalled = Recall.call(&context, json!({})).await.unwrap();
        assert!(!recalled.contains("Miso"), "{recalled}");
        assert!(matches!(
            ForgetFact.call(&context, json!({"id": id})).await,
            Err(ToolError::InvalidArguments(m)) if m.contains("no fact")
        ));
        assert!(matches!(
            Remember.call(&context, json!({"text": "wrong field"})).await,
            Err(ToolError::InvalidArguments(_))
        ));
    }
}
