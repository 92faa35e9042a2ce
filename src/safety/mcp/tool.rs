//! One tool of a tool server, as a [`Tool`]: its call goes to the server
//! over the connection the supervisor holds, concurrently with any other
//! conversation's. The box around it bounds the call by the server's
//! `timeout_s` and cuts the output at the cap; a call that runs out of time
//! is dropped here, so the turn goes on, and the SDK then tells the server
//! it was cancelled (`notifications/cancelled`). The server's answer becomes
//! text and images: its text parts as they are, its image parts as images
//! (shown to a model that can see them), an audio part as a note saying
//! what was left out, a resource by its text or its address; an answer the
//! server marks as an error is a tool error the model is shown.

use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient};

use super::schema::Offered;
use crate::model::llm::ToolSpec;
use crate::safety::tools::{Tool, ToolAnswer, ToolContext, ToolError};

/// A server's tool, bound to the connection it was listed on.
pub struct McpTool {
    server: String,
    offered: Offered,
    peer: Peer<RoleClient>,
    timeout: Duration,
    /// The sandbox the server's process runs in; `None` for one at a URL.
    sandbox: Option<Sandboxed>,
}

/// The sandbox a server's process runs in, as its tools tell of it.
#[derive(Clone, Debug)]
pub struct Sandboxed {
    /// The ruleset in a few words, for the audit.
    pub summary: String,
    /// Added to an error that reads as a permission refused.
    pub refusal_hint: Option<String>,
}

impl McpTool {
    pub fn new(server: &str, offered: Offered, peer: Peer<RoleClient>, timeout: Duration) -> Self {
        Self {
            server: server.to_owned(),
            offered,
            peer,
            timeout,
            sandbox: None,
        }
    }

    /// The tool of a server whose process runs in `sandbox`: its calls
    /// audited so, and its permission errors explained.
    pub fn confined(self, sandbox: Option<Sandboxed>) -> Self {
        Self { sandbox, ..self }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.offered.spec.clone()
    }

    fn confinement(&self) -> Option<String> {
        self.sandbox.as_ref().map(|sandbox| sandbox.summary.clone())
    }

    fn server(&self) -> Option<&str> {
        Some(&self.server)
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        self.answer(context, arguments).await.map(ToolAnswer::into_text)
    }

    async fn answer(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<ToolAnswer, ToolError> {
        let serde_json::Value::Object(arguments) = arguments else {
            return Err(ToolError::InvalidArguments("arguments must be a JSON object".into()));
        };
        let request = CallToolRequestParams::new(self.offered.remote.clone()).with_arguments(arguments);
        let result =
            self.peer.call_tool(request).await.map_err(|error| {
                ToolError::Failed(format!("the MCP server {:?} did not answer: {error}", self.server))
            })?;
        let hint = self
            .sandbox
            .as_ref()
            .and_then(|sandbox| sandbox.refusal_hint.as_deref());
        answer(&self.offered.spec.name, result).map_err(|error| explained(error, hint))
    }
}

/// `error`, with `hint` added when it reads as a permission the system
/// refused (which the sandbox may have).
fn explained(error: ToolError, hint: Option<&str>) -> ToolError {
    match (error, hint) {
        (ToolError::Failed(text), Some(hint)) if crate::safety::sandbox::refused(&text) => {
            ToolError::Failed(format!("{text}\n{hint}"))
        }
        (error, _) => error,
    }
}

/// The server's answer to a call of `tool` as the model's text and images,
/// or its error (whose images, if any, are left out).
pub fn answer(tool: &str, result: CallToolResult) -> Result<ToolAnswer, ToolError> {
    let mut answer = ToolAnswer::default();
    for content in &result.content {
        match content {
            ContentBlock::Image(image) => match BASE64.decode(&image.data) {
                Ok(bytes) => answer.add_image(tool, &image.mime_type, bytes),
                Err(_) => answer.add_line(&format!("[an image ({}) that is not valid base64]", image.mime_type)),
            },
            other => answer.add_line(&part(other)),
        }
    }
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        answer.add_line(&structured.to_string());
    }
    if result.is_error == Some(true) {
        let text = answer.into_text();
        let text = if text.is_empty() {
            "the tool failed and said nothing more".to_owned()
        } else {
            text
        };
        return Err(ToolError::Failed(text));
    }
    Ok(answer)
}

/// A part of the answer other than an image, as text.
fn part(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[an image ({})]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio ({}) that cannot be played here]", audio.mime_type),
        ContentBlock::Resource(resource) => match &resource.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, .. } => format!("[a file at {uri}]"),
            _ => "[a resource that cannot be shown here]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[a resource at {}]", link.uri),
        _ => "[a part of the answer that cannot be shown here]".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock as Content;

    use super::*;

    #[test]
    fn a_refused_permission_is_explained_and_other_errors_are_not() {
        let hint = Some("[sandbox: …]");
        let refused = ToolError::Failed("EACCES: permission denied, open '/etc/shadow'".into());
        assert!(matches!(explained(refused, hint), ToolError::Failed(text) if text.ends_with("\n[sandbox: …]")));
        let other = ToolError::Failed("no such city".into());
        assert!(matches!(explained(other, hint), ToolError::Failed(text) if text == "no such city"));
        let unconfined = ToolError::Failed("Permission denied".into());
        assert!(matches!(explained(unconfined, None), ToolError::Failed(text) if text == "Permission denied"));
    }

    #[test]
    fn text_is_kept_an_image_is_kept_as_an_image_and_an_error_is_the_tools() {
        let result = CallToolResult::success(vec![
            Content::text("one"),
            Content::image("aGVsbG8h", "image/png"),
            Content::image("not base64!", "image/png"),
        ]);
        let answered = answer("srv__shot", result).unwrap();
        assert_eq!(answered.text, "one\n[an image (image/png) that is not valid base64]");
        assert_eq!(answered.images.len(), 1);
        let image = &answered.images[0];
        assert_eq!(image.bytes.as_deref(), Some(&b"hello!"[..]));
        assert_eq!(
            (image.mime.as_str(), image.tool.as_deref()),
            ("image/png", Some("srv__shot"))
        );

        let failed = CallToolResult::error(vec![Content::text("no such city")]);
        assert_eq!(
            answer("srv__shot", failed),
            Err(ToolError::Failed("no such city".into()))
        );
    }
}
