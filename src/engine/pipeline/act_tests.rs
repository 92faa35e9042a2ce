//! Act with real skills and a real tool box.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, MessageId, UserId};

use super::*;
use crate::config::{SkillsConfig, ToolsConfig};
use crate::model::llm::{Role, ToolSpec};
use crate::model::signal::{Message, Origin};
use crate::safety::tools::{Tool, testing};

/// Upper-cases its `text` argument; also answers to the name "shell" to
/// show what the gates do without running anything.
struct Upper(&'static str);

#[async_trait]
impl Tool for Upper {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.0.into(),
            description: "upper-cases".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        Ok(arguments.to_string().to_uppercase())
    }
}

fn signal() -> Signal {
    Signal {
        origin: Origin {
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap()),
            sender: UserId::new("1").unwrap(),
            message_id: MessageId::new("m").unwrap(),
            sender_names: Default::default(),
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

async fn run(proposal: Proposal) -> Acted {
    let tools = ToolBox::new([Arc::new(Upper("upper")) as Arc<dyn Tool>, Arc::new(Upper("shell"))]);
    let skills = Skills::from_config(&SkillsConfig::default(), &ToolsConfig::default(), &Default::default()).unwrap();
    let context = testing::context();
    let actuators = Actuators {
        tools: &tools,
        skills: &skills,
        context: &context,
        clock: crate::foundation::clock::Clock::at(1_000),
        consensus: None,
        standing: None,
    };
    act(&signal(), proposal, &actuators, &Context::default()).await
}

#[tokio::test]
async fn a_reply_ends_the_turn() {
    let acted = run(Proposal::Reply { text: "hello".into() }).await;
    assert_eq!(acted.replies, [(ReplyKind::Answer, "hello".to_owned())]);
    assert!(acted.feedback.is_none());
}

#[tokio::test]
async fn tool_calls_run_in_order_and_feed_back_one_level_deeper() {
    let calls = vec![
        call("1", "upper", r#"{"a":"x"}"#),
        call("2", "missing", "{}"),
        call("3", "upper", "{not json"),
        call("4", "upper", r#"{"b":"y"}"#),
    ];
    let acted = run(Proposal::ToolCalls { calls }).await;
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
    assert_eq!(contents[0], (r#"{"A":"X"}"#, false));
    assert!(
        contents[1].1 && contents[1].0.contains("no tool named \"missing\""),
        "{contents:?}"
    );
    assert!(
        contents[2].1 && contents[2].0.contains("not valid JSON"),
        "{contents:?}"
    );
    assert_eq!(contents[3], (r#"{"B":"Y"}"#, false));
    let audited: Vec<_> = acted
        .audit
        .iter()
        .map(|event| match &event.what {
            crate::people::audit::Audited::ToolRan { action, .. } => action.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        audited,
        [r#"upper {"a":"x"}"#, r#"upper {"b":"y"}"#],
        "what ran is audited, nothing else"
    );
    assert_eq!(acted.repairs, 2, "the unknown tool and the bad JSON");
    let roles: Vec<_> = acted.transcript.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Assistant, Role::Tool, Role::Tool, Role::Tool, Role::Tool]);
    // The kept calls are a valid request for any provider: own ids, JSON objects.
    let kept = &acted.transcript[0].tool_calls;
    assert_eq!(kept[2].arguments, "{}", "bad JSON is not kept");
    for (call, result) in kept.iter().zip(&acted.transcript[1..]) {
        assert!(
            call.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{}",
            call.id
        );
        assert_eq!(result.tool_call_id.as_ref(), Some(&call.id));
    }
    let mut ids: Vec<_> = kept.iter().map(|c| &c.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4, "unique ids");
}

#[tokio::test]
async fn gates_stop_dangerous_calls_and_hold_risky_ones_for_approval() {
    let calls = vec![
        call("1", "shell", r#"{"command":"rm -rf /"}"#),
        call("2", "shell", r#"{"command":"ls"}"#),
    ];
    let acted = run(Proposal::ToolCalls { calls }).await;
    let SignalBody::ToolResults(results) = acted.feedback.unwrap().body else {
        panic!()
    };
    assert!(
        results.results[0].content.contains("refused: shell_safety"),
        "{:?}",
        results.results[0]
    );
    assert_eq!(acted.requested.len(), 1, "ls waits for a person");
    let requested = &acted.requested[0];
    assert_eq!(requested.call.summary(), "shell: ls");
    assert_eq!(requested.skill, "approval_policy");
    assert!(
        results.results[1].content.contains("needs a person's approval")
            && results.results[1].content.contains(requested.token.as_str()),
        "the model is told it waits, and for which approval: {:?}",
        results.results[1]
    );
    assert!(results.results[0].is_error);
    assert!(
        // The stand-in tool upper-cases its arguments: `"COMMAND"` would mean it ran.
        results.results.iter().all(|r| !r.content.contains("\"COMMAND\"")) && acted.audit.is_empty(),
        "nothing ran"
    );
    assert_eq!(acted.replies.len(), 1, "the prompt is the worker's to send");
    assert!(
        acted.replies[0].1.contains("I did not run `shell: rm -rf /`"),
        "{:?}",
        acted.replies
    );
    assert_eq!(acted.repairs, 0, "well-formed calls that are refused are not malformed");
}

#[tokio::test]
async fn a_malformed_answer_goes_back_to_the_model() {
    let acted = run(Proposal::Malformed {
        text: "{\"name\":\"x\",\"arguments\":{}}".into(),
        problem: "use native tools".into(),
    })
    .await;
    assert!(acted.replies.is_empty(), "the person never sees it");
    assert_eq!(acted.repairs, 1);
    assert_eq!(acted.transcript[1].content, "[passepartout] use native tools");
    assert!(matches!(acted.feedback.unwrap().body, SignalBody::Correction(_)));
}
