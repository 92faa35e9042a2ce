//! Act: carry out a proposal. A reply is handed back for the outbox. Tool
//! calls run in order, each first parsed (arguments that are not a JSON
//! object, or an unknown tool, are errors for the model) and judged by the
//! skills' gates; their outputs become the next signal (depth + 1), which the
//! turn feeds back into reason. A rejected call is not run: the model is told
//! why, and so is the person. A call that needs approval is not run either:
//! it becomes a [`Requested`] approval, and the model is told it waits —
//! unless a standing rule a person made ("always") covers it, which lets it
//! run as if no approval were needed. Every call that runs is audited (one
//! a standing rule let through, with the rule).

use std::hash::{Hash, Hasher};

use passepartout_gateway::ReplyKind;
use serde_json::Value;

use crate::approvals::{Requested, StandingRules};
use crate::audit::{AuditEvent, Audited};
use crate::clock::Clock;
use crate::llm::{ChatMessage, ToolCall};
use crate::pipeline::reason::Proposal;
use crate::signal::{Correction, Origin, Signal, SignalBody, ToolOutput, ToolResults};
use crate::skills::{Decision, ProposedCall, Skills};
use crate::tools::{ToolBox, ToolContext, ToolError, parse_object};

/// What act needs.
pub struct Actuators<'a> {
    pub tools: &'a ToolBox,
    pub skills: &'a Skills,
    pub context: &'a ToolContext,
    pub clock: Clock,
    /// The standing rules that let a call held for approval run; none: every
    /// such call waits for a person.
    pub standing: Option<&'a StandingRules>,
}

/// What acting produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Acted {
    /// Messages to append to the turn's transcript (what the model said, what tools returned).
    pub transcript: Vec<ChatMessage>,
    /// Messages for the person.
    pub replies: Vec<(ReplyKind, String)>,
    /// The signal to feed back, if the proposal ran (or tried to run) tools.
    pub feedback: Option<Signal>,
    /// Malformed output found in this step (bad arguments, unknown tools,
    /// a tool call written as text), each sent back to the model.
    pub repairs: u32,
    /// Calls held for a person's approval.
    pub requested: Vec<Requested>,
    /// Calls that ran.
    pub audit: Vec<AuditEvent>,
}

/// Carries out `proposal`, made in answer to `signal`.
pub async fn act(signal: &Signal, proposal: Proposal, actuators: &Actuators<'_>) -> Acted {
    match proposal {
        Proposal::Reply { text } => Acted {
            transcript: vec![ChatMessage::assistant(text.clone())],
            replies: vec![(ReplyKind::Answer, text)],
            ..Acted::default()
        },
        Proposal::Malformed { text, problem } => {
            tracing::debug!(conversation = %signal.origin.conversation, %problem, "malformed model output");
            Acted {
                transcript: vec![
                    ChatMessage::assistant(text),
                    ChatMessage::user(correction_text(&problem)),
                ],
                feedback: Some(signal.feedback(SignalBody::Correction(Correction { problem }))),
                repairs: 1,
                ..Acted::default()
            }
        }
        Proposal::ToolCalls { calls } => {
            let calls = normalized(signal, calls);
            let mut acted = Acted {
                transcript: vec![ChatMessage::assistant_tool_calls(
                    calls.iter().map(|(call, _)| call.clone()).collect(),
                )],
                ..Acted::default()
            };
            let mut results = Vec::with_capacity(calls.len());
            for (call, arguments) in calls {
                let (result, malformed) = run_one(signal, &call.name, arguments, actuators, &mut acted).await;
                acted.repairs += u32::from(malformed);
                let (content, is_error) = match result {
                    Ok(output) => (output, false),
                    Err(error) => (format!("error: {error}"), true),
                };
                tracing::debug!(tool = %call.name, is_error, "tool call finished");
                acted
                    .transcript
                    .push(ChatMessage::tool_result(call.id.clone(), content.clone()));
                results.push(ToolOutput {
                    call_id: call.id,
                    name: call.name,
                    content,
                    is_error,
                });
            }
            acted.feedback = Some(signal.feedback(SignalBody::ToolResults(ToolResults { results })));
            acted
        }
    }
}

/// The calls as kept in the transcript, each with the model's arguments
/// parsed (or why they could not be). Kept calls get ids of our own —
/// unique across the conversation's history, the same when a turn is redone,
/// and valid for every provider (Anthropic wants `[A-Za-z0-9_-]+`, unique per
/// request) — and arguments that are a JSON object (`{}` when the model's
/// were not: its error result says what was wrong), so the history stays a
/// valid request for any provider the cascade falls through to.
fn normalized(signal: &Signal, calls: Vec<ToolCall>) -> Vec<(ToolCall, Result<Value, ToolError>)> {
    let mut hasher = std::hash::DefaultHasher::new();
    signal.origin.message_id.as_str().hash(&mut hasher);
    let turn = hasher.finish();
    calls
        .into_iter()
        .enumerate()
        .map(|(index, call)| {
            let parsed = parse_object(&call.arguments);
            let kept = ToolCall {
                id: format!("call_{turn:016x}_{}_{index}", signal.depth),
                name: call.name,
                arguments: parsed.as_ref().map_or_else(|_| "{}".to_owned(), Value::to_string),
            };
            (kept, parsed)
        })
        .collect()
}

/// How a correction reads in the transcript: clearly not the person speaking.
pub fn correction_text(problem: &str) -> String {
    format!("[passepartout] {problem}")
}

/// One call: judged, then run. The flag says whether the model's output was malformed.
async fn run_one(
    signal: &Signal,
    name: &str,
    arguments: Result<Value, ToolError>,
    actuators: &Actuators<'_>,
    acted: &mut Acted,
) -> (Result<String, ToolError>, bool) {
    if !actuators.tools.contains(name) {
        return (Err(ToolError::Unknown(name.to_owned())), true);
    }
    let arguments = match arguments {
        Ok(arguments) => arguments,
        Err(error) => return (Err(error), true),
    };
    let proposed = ProposedCall {
        tool: name.to_owned(),
        arguments,
    };
    let result = match actuators.skills.decide(proposed, &signal.origin) {
        Decision::Run(call) => run_call(signal, call, None, actuators, acted).await,
        Decision::Reject { skill, reason, call } => {
            acted.replies.push((
                ReplyKind::Notice,
                format!("I did not run `{}`: {reason}.", call.summary()),
            ));
            Err(ToolError::Refused(format!("{skill}: {reason}")))
        }
        Decision::NeedsApproval { skill, reason, call } => {
            let standing = actuators.standing;
            if let Some(rule) = standing.and_then(|rules| rules.covering(&signal.origin.conversation, &call)) {
                tracing::info!(rule = rule.id, call = %call.summary(), "a standing rule lets a call run without asking");
                return (run_call(signal, call, Some(rule.id), actuators, acted).await, false);
            }
            let requested = Requested::new(call, skill, reason);
            let waiting = format!(
                "not run yet: it needs a person's approval ({}), asked for as {}. \
                 You will be told the outcome in this conversation; do not call it again meanwhile.",
                requested.reason,
                requested.token.as_str()
            );
            acted.requested.push(requested);
            Ok(waiting)
        }
    };
    (result, false)
}

/// Runs `call`, which the gates (or standing rule `rule`) let through, and audits it.
async fn run_call(
    signal: &Signal,
    call: ProposedCall,
    rule: Option<u64>,
    actuators: &Actuators<'_>,
    acted: &mut Acted,
) -> Result<String, ToolError> {
    let action = call.summary();
    let result = actuators
        .tools
        .call_parsed(actuators.context, &call.tool, call.arguments)
        .await;
    let mut event = ran(
        &signal.origin,
        &actuators.clock,
        call.tool,
        action,
        result.is_err(),
        None,
    );
    if let Audited::ToolRan { rule: by_rule, .. } = &mut event.what {
        *by_rule = rule;
    }
    acted.audit.push(event);
    result
}

/// The audit event for a call that ran.
pub fn ran(
    origin: &Origin,
    clock: &Clock,
    tool: String,
    action: String,
    is_error: bool,
    approval: Option<passepartout_gateway::ApprovalToken>,
) -> AuditEvent {
    AuditEvent {
        at_ms: clock.now_ms(),
        conversation: origin.conversation.clone(),
        what: Audited::ToolRan {
            tool,
            action,
            requester: origin.sender.clone(),
            is_error,
            approval,
            rule: None,
        },
    }
}

#[cfg(test)]
#[path = "act_tests.rs"]
mod tests;
