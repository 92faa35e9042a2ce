//! Tools that only tests plug into a daemon.

use async_trait::async_trait;
use passepartout::model::llm::ToolSpec;
use passepartout::safety::tools::{Tool, ToolContext, ToolError};
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

/// A tool that only counts its calls, so a test sees whether (and how often)
/// an action ran without running anything real. Clones share the count.
#[derive(Clone, Default)]
pub struct Record {
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Record {
    /// How many times the tool ran.
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for Record {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "record".into(),
            description: "records a note".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"what": {"type": "string"}},
            }),
        }
    }
    async fn call(&self, _: &ToolContext, arguments: Value) -> Result<String, ToolError> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let what = arguments["what"].as_str().unwrap_or_default();
        Ok(format!("recorded #{n}: {what}"))
    }
}
