//! Tools that only tests plug into a daemon.

use async_trait::async_trait;
use passepartout::llm::ToolSpec;
use passepartout::tools::{Tool, ToolContext, ToolError};
use serde_json::Value;

/// A tool whose call panics: a bug inside a turn.
pub struct Explode;

#[async_trait]
impl Tool for Explode {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "explode".into(),
            description: "panics".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, _: &ToolContext, _: Value) -> Result<String, ToolError> {
        panic!("the explode tool always panics");
    }
}
