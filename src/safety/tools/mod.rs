//! Tools the model can call. Each [`Tool`] has a name, a JSON schema (offered
//! to the model as a native tool), a timeout and an output cap, and runs in
//! act. The [`ToolBox`] is the registry: it parses the model's argument text
//! (model output is data — invalid JSON is an error for the model, never
//! something to guess at), enforces the timeout and the cap, and counts each
//! tool's executions, time and failures for `status`. Besides its fixed
//! tools it may hold [`LateTools`], a source whose tools come and go while
//! the daemon runs (a tool server's). The [`ToolCatalog`] knows the
//! registered tools' names and arguments without setting them up.

mod answer;
mod builtin;
mod catalog;
pub mod files;
mod history;
pub mod http_get;
mod memory;
pub mod net_policy;
mod outgoing;
pub mod readable;
pub mod send_file;
pub mod shell;
mod time;
pub mod uploads;
pub mod web_search;
pub mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{ConversationKey, UserId};
use serde::de::DeserializeOwned;
use thiserror::Error;

pub use crate::foundation::telemetry::{Telemetry, UsageStats};
use crate::model::llm::ToolSpec;
pub use answer::ToolAnswer;
pub use builtin::{SetupError, builtin, builtin_specs};
pub use catalog::ToolCatalog;
pub use history::{SearchHistory, best_matches, said};
pub use memory::{ForgetFact, Recall, Remember};
pub use outgoing::Outgoing;
pub use time::CurrentTime;

/// A tool call that did not produce output. The model is shown the message
/// (and the person, for a refusal), so it says what to do differently.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The model named a tool that is not offered.
    #[error("no tool named {0:?}; use one of the tools offered")]
    Unknown(String),
    /// The arguments are not JSON, not an object, or do not fit the schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The request was understood and refused (a path outside the workspace,
    /// a private address): trying again the same way will not work.
    #[error("refused: {0}")]
    Refused(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool did not finish in time and was stopped.
    #[error("timed out after {} s", .0.as_secs_f64())]
    TimedOut(Duration),
}

/// Who a tool call is for. Tools that keep per-person data (memory) scope it
/// by `sender`; nothing else about the turn is reachable from a tool.
#[derive(Clone, Debug)]
pub struct ToolContext {
    pub conversation: ConversationKey,
    pub sender: UserId,
    /// The turn's staged memory writes; committed with the turn.
    pub memory: crate::model::memory::MemorySession,
    /// The loop whose iteration this turn is, if it is one.
    pub loop_turn: Option<Arc<dyn InLoop>>,
    /// The files the turn sends (`send_file`); committed with the turn.
    pub outgoing: Outgoing,
}

/// The tool a background loop's iteration uses to choose its next sleep;
/// offered only there.
pub const SET_NEXT_SLEEP: &str = "set_next_sleep";

/// The background loop whose iteration a turn is, as the tools of that turn
/// see it. The loops implement it; the tools stay unaware of them.
pub trait InLoop: Send + Sync + std::fmt::Debug {
    /// Chooses how long the loop sleeps before its next iteration; the
    /// answer for the model, or why it may not choose.
    fn choose_next_sleep(&self, asked: std::time::Duration) -> Result<String, ToolError>;
}

/// One tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema of the arguments.
    fn spec(&self) -> ToolSpec;

    /// The tool server that brings the tool; `None` for a built-in one.
    fn server(&self) -> Option<&str> {
        None
    }

    /// The sandbox a call's process runs in, for the audit; `None` for a
    /// tool that starts no process.
    fn confinement(&self) -> Option<String> {
        None
    }

    /// Longest the tool may run; `None` means the box's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Runs the tool with the model's arguments, already parsed as a JSON
    /// object. Use [`parse_arguments`] to read them into a typed struct.
    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError>;

    /// Runs the tool as [`Tool::call`] does, its answer with the images it
    /// returned; a tool that can return images overrides this.
    async fn answer(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<ToolAnswer, ToolError> {
        self.call(context, arguments).await.map(ToolAnswer::from)
    }
}

/// Reads tool arguments into `T`; a mismatch (missing field, wrong type,
/// unknown field if `T` denies them) is [`ToolError::InvalidArguments`].
pub fn parse_arguments<T: DeserializeOwned>(arguments: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(arguments).map_err(|error| ToolError::InvalidArguments(error.to_string()))
}

/// Tools that come and go while the daemon runs, offered beside a
/// [`ToolBox`]'s fixed ones. Their names must not be those of fixed tools;
/// a fixed tool wins.
pub trait LateTools: Send + Sync {
    /// The tool called `name`, if it is offered now.
    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>>;

    /// Every tool offered now, in name order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// The tools available to the model, by name.
#[derive(Clone)]
pub struct ToolBox {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Every fixed tool's spec, in name order, built once.
    specs: Arc<[ToolSpec]>,
    /// The tools that come and go, if any source of them is plugged in.
    late: Option<Arc<dyn LateTools>>,
    default_timeout: Duration,
    output_cap: usize,
    telemetry: Arc<Telemetry>,
}

impl Default for ToolBox {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl ToolBox {
    /// A box of `tools` with the default timeout and output cap.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        use crate::config::{DEFAULT_OUTPUT_CAP_BYTES, DEFAULT_TOOL_TIMEOUT_S};
        Self::with_limits(
            tools,
            Duration::from_secs(DEFAULT_TOOL_TIMEOUT_S),
            DEFAULT_OUTPUT_CAP_BYTES,
        )
    }

    /// A box of `tools`; a later tool with the same name replaces an earlier one.
    pub fn with_limits(
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
        default_timeout: Duration,
        output_cap: usize,
    ) -> Self {
        let tools: BTreeMap<String, Arc<dyn Tool>> = tools.into_iter().map(|tool| (tool.spec().name, tool)).collect();
        Self {
            specs: tools.values().map(|tool| tool.spec()).collect(),
            tools,
            late: None,
            default_timeout,
            output_cap,
            telemetry: Arc::new(Telemetry::default()),
        }
    }

    /// The same box, also offering the tools `late` has at each moment.
    pub fn with_late(self, late: Arc<dyn LateTools>) -> Self {
        Self {
            late: Some(late),
            ..self
        }
    }

    /// The specs offered to the model now, the fixed tools' first.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        let late = self.late_tools();
        if late.is_empty() {
            return self.specs.clone();
        }
        let more = late.iter().map(|tool| tool.spec());
        self.specs.iter().cloned().chain(more).collect()
    }

    /// Every tool offered now, the fixed ones first, each in name order.
    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.values().cloned().chain(self.late_tools()).collect()
    }

    /// Whether a tool called `name` is offered.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The tool called `name`, fixed or late.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        match self.tools.get(name) {
            Some(tool) => Some(tool.clone()),
            None => self.late.as_ref()?.tool(name),
        }
    }

    /// The sandbox a call of tool `name` runs in, for the audit.
    pub fn confinement(&self, name: &str) -> Option<String> {
        self.get(name)?.confinement()
    }

    /// The late tools offered now, without those a fixed tool's name hides.
    fn late_tools(&self) -> Vec<Arc<dyn Tool>> {
        let Some(late) = &self.late else {
            return Vec::new();
        };
        let mut tools = late.tools();
        tools.retain(|tool| !self.tools.contains_key(&tool.spec().name));
        tools
    }

    /// Per-tool executions, time and failures; shared, so the status can
    /// read them while the pipeline counts.
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.telemetry
    }

    /// Runs tool `name` with the model's raw `arguments` text: parsed as a
    /// JSON object first, then as [`ToolBox::call_parsed`].
    pub async fn call(&self, context: &ToolContext, name: &str, arguments: &str) -> Result<String, ToolError> {
        if !self.contains(name) {
            return Err(ToolError::Unknown(name.to_owned()));
        }
        self.call_parsed(context, name, parse_object(arguments)?).await
    }

    /// Runs tool `name` under its timeout, its output as text cut at the
    /// cap, each image a note after it.
    pub async fn call_parsed(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<String, ToolError> {
        self.answer_parsed(context, name, arguments)
            .await
            .map(ToolAnswer::into_text)
    }

    /// Runs tool `name` under its timeout; its text is cut at the cap, and
    /// its images are kept (bounded in number and size by [`ToolAnswer`]).
    pub async fn answer_parsed(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<ToolAnswer, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError::Unknown(name.to_owned()));
        };
        let limit = tool.timeout().unwrap_or(self.default_timeout);
        let started = tokio::time::Instant::now();
        let result = match tokio::time::timeout(limit, tool.answer(context, arguments)).await {
            Ok(result) => result,
            Err(_) => Err(ToolError::TimedOut(limit)),
        };
        self.telemetry.record(name, started.elapsed(), result.is_err());
        result.map(|answer| ToolAnswer {
            text: cap(answer.text, self.output_cap),
            images: answer.images,
        })
    }
}

/// The model's argument text as a JSON object. Empty text counts as `{}`
/// (some servers send it for tools without parameters).
pub fn parse_object(arguments: &str) -> Result<serde_json::Value, ToolError> {
    let text = arguments.trim();
    if text.is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    if text.starts_with("```") {
        return Err(ToolError::InvalidArguments(
            "arguments must be a bare JSON object, not wrapped in a markdown code fence".into(),
        ));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err(ToolError::InvalidArguments("arguments must be a JSON object".into())),
        Err(error) => Err(ToolError::InvalidArguments(format!("not valid JSON ({error})"))),
    }
}

/// `output`, cut to at most `limit` bytes on a character boundary, with a note.
pub fn cap(output: String, limit: usize) -> String {
    if output.len() <= limit {
        return output;
    }
    let mut end = limit;
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output cut: {} of {} bytes shown]",
        &output[..end],
        end,
        output.len()
    )
}

#[cfg(test)]
pub(crate) mod testing {
    //! A [`ToolContext`] for unit tests, with memory on a throwaway store.
    use super::*;

    pub fn context() -> ToolContext {
        let (dir, store) = crate::store::tests_support::open_temp();
        // Keep the directory as long as the process: tests are short.
        std::mem::forget(dir);
        let conversation = crate::store::tests_support::conversation("tools");
        let sender = UserId::new("tester").unwrap();
        ToolContext {
            memory: crate::model::memory::MemorySession::new(
                store,
                crate::foundation::clock::Clock::start(),
                &conversation.gateway,
                &sender,
            ),
            conversation,
            sender,
            loop_turn: None,
            outgoing: Outgoing::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_a_json_object() {
        assert_eq!(parse_object("").unwrap(), serde_json::json!({}));
        assert!(
            matches!(parse_object("{\"a\":1"), Err(ToolError::InvalidArguments(m)) if m.contains("not valid JSON"))
        );
        assert!(matches!(parse_object("[1]"), Err(ToolError::InvalidArguments(m)) if m.contains("object")));
        assert!(matches!(parse_object("```json\n{}\n```"), Err(ToolError::InvalidArguments(m)) if m.contains("fence")));
    }

    #[test]
    fn output_is_cut_on_a_character_boundary() {
        let capped = cap("ééé".into(), 3);
        assert!(capped.starts_with("é\n[output cut: 2 of 6 bytes"), "{capped}");
        assert_eq!(cap("short".into(), 10), "short");
    }
}
