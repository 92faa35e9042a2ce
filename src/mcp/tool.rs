//! One tool of a tool server, as a [`Tool`]: its call goes to the server
//! over the connection the supervisor holds, concurrently with any other
//! conversation's. The box around it bounds the call by the server's
//! `timeout_s` and cuts the output at the cap; a call that runs out of time
//! is dropped here, so the turn goes on, and the SDK then tells the server
//! it was cancelled (`notifications/cancelled`). The server's answer becomes text:
//! its text parts as they are, an image or audio part as a note saying what
//! was left out, a resource by its text or its address; an answer the server
//! marks as an error is a tool error the model is shown.

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient};

use super::schema::Offered;
use crate::llm::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolError};

/// A server's tool, bound to the connection it was listed on.
pub struct McpTool {
    server: String,
    offered: Offered,
    peer: Peer<RoleClient>,
    timeout: Duration,
}

impl McpTool {
    pub fn new(server: &str, offered: Offered, peer: Peer<RoleClient>, timeout: Duration) -> Self {
        Self {
            server: server.to_owned(),
            offered,
            peer,
            timeout,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.offered.spec.clone()
    }

    fn server(&self) -> Option<&str> {
        Some(&self.server)
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let serde_json::Value::Object(arguments) = arguments else {
            return Err(ToolError::InvalidArguments("arguments must be a JSON object".into()));
        };
        let request = CallToolRequestParams::new(self.offered.remote.clone()).with_arguments(arguments);
        let result =
            self.peer.call_tool(request).await.map_err(|error| {
                ToolError::Failed(format!("the MCP server {:?} did not answer: {error}", self.server))
            })?;
        answer(result)
    }
}

/// The server's answer as the model's text, or its error.
pub fn answer(result: CallToolResult) -> Result<String, ToolError> {
    let mut parts: Vec<String> = result.content.iter().map(part).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        let text = if text.is_empty() {
            "the tool failed and said nothing more".to_owned()
        } else {
            text
        };
        return Err(ToolError::Failed(text));
    }
    Ok(text)
}

fn part(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[an image ({}, {} bytes) that cannot be shown here]",
            image.mime_type,
            image.data.len() / 4 * 3
        ),
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
    fn text_is_kept_an_image_is_noted_and_an_error_is_the_tools() {
        let result = CallToolResult::success(vec![Content::text("one"), Content::image("aGVsbG8h", "image/png")]);
        assert_eq!(
            answer(result).unwrap(),
            "one\n[an image (image/png, 6 bytes) that cannot be shown here]"
        );
        let failed = CallToolResult::error(vec![Content::text("no such city")]);
        assert_eq!(answer(failed), Err(ToolError::Failed("no such city".into())));
    }
}
