//! Act: carry out a proposal. A reply is handed back for the outbox; tool
//! calls run in order and their outputs become the next signal (depth + 1),
//! which the turn feeds back into reason.

use crate::llm::ChatMessage;
use crate::pipeline::reason::Proposal;
use crate::signal::{Signal, SignalBody, ToolOutput, ToolResults};
use crate::tools::ToolBox;

/// What acting produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Acted {
    /// Messages to append to the turn's transcript (what the model said, what tools returned).
    pub transcript: Vec<ChatMessage>,
    /// Text for the person, if the proposal was a reply.
    pub reply: Option<String>,
    /// The signal to feed back, if the proposal ran tools.
    pub feedback: Option<Signal>,
}

/// Carries out `proposal`, made in answer to `signal`.
pub async fn act(signal: &Signal, proposal: Proposal, tools: &ToolBox) -> Acted {
    match proposal {
        Proposal::Reply { text } => Acted {
            transcript: vec![ChatMessage::assistant(text.clone())],
            reply: Some(text),
            feedback: None,
        },
        Proposal::ToolCalls { calls } => {
            let mut transcript = vec![ChatMessage::assistant_tool_calls(calls.clone())];
            let mut results = Vec::with_capacity(calls.len());
            for call in calls {
                let (content, is_error) = match tools.call(&call.name, &call.arguments).await {
                    Ok(output) => (output, false),
                    Err(error) => (format!("error: {error}"), true),
                };
                tracing::debug!(tool = %call.name, is_error, "tool call finished");
                transcript.push(ChatMessage::tool_result(call.id.clone(), content.clone()));
                results.push(ToolOutput {
                    call_id: call.id,
                    name: call.name,
                    content,
                    is_error,
                });
            }
            let feedback = signal.feedback(SignalBody::ToolResults(ToolResults { results }));
            Acted {
                transcript,
                reply: None,
                feedback: Some(feedback),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, MessageId, UserId};

    use super::*;
    use crate::llm::{Role, ToolCall, ToolSpec};
    use crate::signal::{Message, Origin};
    use crate::tools::{Tool, ToolError};

    struct Upper;

    #[async_trait]
    impl Tool for Upper {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "upper".into(),
                description: "upper-cases".into(),
                parameters: serde_json::json!({}),
            }
        }
        async fn call(&self, arguments: &str) -> Result<String, ToolError> {
            Ok(arguments.to_uppercase())
        }
    }

    fn signal() -> Signal {
        Signal {
            origin: Origin {
                conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap()),
                sender: UserId::new("1").unwrap(),
                message_id: MessageId::new("m").unwrap(),
            },
            depth: 3,
            body: SignalBody::Message(Message { text: "hi".into() }),
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[tokio::test]
    async fn a_reply_ends_the_turn() {
        let acted = act(&signal(), Proposal::Reply { text: "hello".into() }, &ToolBox::default()).await;
        assert_eq!(acted.reply.as_deref(), Some("hello"));
        assert!(acted.feedback.is_none());
    }

    #[tokio::test]
    async fn tool_calls_run_in_order_and_feed_back_one_level_deeper() {
        let tools = ToolBox::new([Arc::new(Upper) as Arc<dyn Tool>]);
        let calls = vec![
            call("1", "upper", "a"),
            call("2", "missing", "{}"),
            call("3", "upper", "b"),
        ];
        let acted = act(&signal(), Proposal::ToolCalls { calls }, &tools).await;
        let feedback = acted.feedback.expect("tool calls feed back");
        assert_eq!(feedback.depth, 4);
        let SignalBody::ToolResults(results) = feedback.body else {
            panic!()
        };
        let contents: Vec<_> = results
            .results
            .iter()
            .map(|r| (r.content.as_str(), r.is_error))
            .collect();
        assert_eq!(contents[0], ("A", false));
        assert!(contents[1].1 && contents[1].0.contains("no tool named"), "{contents:?}");
        assert_eq!(contents[2], ("B", false));
        let roles: Vec<_> = acted.transcript.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::Assistant, Role::Tool, Role::Tool, Role::Tool]);
    }
}
