//! Tools the model can call: each has a JSON schema offered to the model as a
//! native tool, and runs in act. The registry is how tools are plugged in.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use thiserror::Error;

use crate::llm::ToolSpec;

/// A tool call that did not produce output. The model is shown the message.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ToolError {
    #[error("no tool named {0:?}; use one of the tools offered")]
    Unknown(String),
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
}

/// One tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema of the arguments.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool. `arguments` is the model's JSON text, unparsed: model
    /// output is data, and each tool validates its own arguments.
    async fn call(&self, arguments: &str) -> Result<String, ToolError>;
}

/// The tools available to the model.
#[derive(Clone, Default)]
pub struct ToolBox {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolBox {
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        Self {
            tools: tools.into_iter().map(|tool| (tool.spec().name, tool)).collect(),
        }
    }

    /// The specs offered to the model, in name order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|tool| tool.spec()).collect()
    }

    /// Runs tool `name` with `arguments`.
    pub async fn call(&self, name: &str, arguments: &str) -> Result<String, ToolError> {
        match self.tools.get(name) {
            Some(tool) => tool.call(arguments).await,
            None => Err(ToolError::Unknown(name.to_owned())),
        }
    }
}
