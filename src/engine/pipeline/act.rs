//! Act: carry out a proposal. A reply is handed back for the outbox. Tool
//! calls run in order, each first parsed (arguments that are not a JSON
//! object, or an unknown tool, are errors for the model) and judged by the
//! skills' gates; their outputs become the next signal (depth + 1), which the
//! turn feeds back into reason. A rejected call is not run: the model is told
//! why, and so is the person. Images a tool returns go beside its result in
//! the transcript, for a model that can see them. A call that needs approval
//! is not run either: it becomes a [`Requested`] approval, and the model is
//! told it waits — unless a standing rule a person made ("always") covers
//! it, which lets it run as if no approval were needed. Between the skills'
//! decision and any of that, a call in the consensus gate's scope is put to
//! the models' vote (`consensus/`), which may refuse it or send it to a
//! person, never let it through; a call the models objected to is not let
//! through by a standing rule either. Every call that runs (one a standing
//! rule let through, with the rule), and every vote, is audited.

use std::hash::{Hash, Hasher};

use passepartout_gateway::ReplyKind;
use passepartout_gateway::markup::{code, escape};
use serde_json::Value;

use crate::engine::pipeline::cascade::Context;
use crate::engine::pipeline::consensus::{self, Consensus};
use crate::engine::pipeline::reason::Proposal;
use crate::foundation::clock::Clock;
use crate::model::llm::{ChatMessage, Note, ToolCall};
use crate::model::signal::{Correction, Origin, Signal, SignalBody, ToolOutput, ToolResults};
use crate::people::audit::{AuditEvent, Audited, VoteOutcome};
use crate::safety::approvals::{Approvals, Requested};
use crate::safety::skills::{Decision, ProposedCall, Skills};
use crate::safety::tools::{ToolAnswer, ToolBox, ToolContext, ToolError, parse_object};
use crate::store::ByProvider;

/// What act needs.
pub struct Actuators<'a> {
    pub tools: &'a ToolBox,
    pub skills: &'a Skills,
    pub context: &'a ToolContext,
    pub clock: Clock,
    /// The models' vote on calls in its scope, when configured.
    pub consensus: Option<&'a Consensus>,
    /// The approvals desk, whose standing rules (made by someone who may
    /// still approve) let a call held for approval run; none: every such
    /// call waits for a person.
    pub standing: Option<&'a Approvals>,
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
    /// Calls that ran, and votes on calls.
    pub audit: Vec<AuditEvent>,
    /// The tokens the consensus gate's voters used, by provider.
    pub voted: ByProvider,
}

/// Carries out `proposal`, made in answer to `signal` by a model that saw `seen`.
pub async fn act(signal: &Signal, proposal: Proposal, actuators: &Actuators<'_>, seen: &Context) -> Acted {
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
                    ChatMessage::noted(correction_text(&problem), Note::Hidden),
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
                let (result, malformed) = run_one(signal, &call.name, arguments, actuators, seen, &mut acted).await;
                acted.repairs += u32::from(malformed);
                let (content, images, is_error) = match result {
                    Ok(answer) => (answer.text, answer.images, false),
                    Err(error) => (format!("error: {error}"), Vec::new(), true),
                };
                tracing::debug!(tool = %call.name, is_error, images = images.len(), "tool call finished");
                acted.transcript.push(ChatMessage::tool_result_with_images(
                    call.id.clone(),
                    content.clone(),
                    images,
                ));
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

/// One call: judged, voted on when in scope, then run. The flag says
/// whether the model's output was malformed.
async fn run_one(
    signal: &Signal,
    name: &str,
    arguments: Result<Value, ToolError>,
    actuators: &Actuators<'_>,
    seen: &Context,
    acted: &mut Acted,
) -> (Result<ToolAnswer, ToolError>, bool) {
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
    let decision = actuators.skills.decide(proposed, &signal.origin);
    let (decision, votes, objected) = match actuators.consensus {
        Some(gate) if gate.applies(&decision) => vote(gate, decision, seen, signal, actuators, acted).await,
        _ => (decision, None, false),
    };
    let result = match decision {
        Decision::Run(call) => run_call(signal, call, None, actuators, acted).await,
        Decision::Reject { skill, reason, call } => {
            acted.replies.push((
                ReplyKind::Notice,
                format!("I did not run {}: {}.", code(&call.summary()), escape(&reason)),
            ));
            Err(ToolError::Refused(format!("{skill}: {reason}")))
        }
        Decision::NeedsApproval { skill, reason, call } => {
            let standing = actuators.standing.filter(|_| !objected && skill != consensus::SKILL);
            if let Some(rule) =
                standing.and_then(|approvals| approvals.rule_covering(&signal.origin.conversation, &call))
            {
                tracing::info!(rule = rule.id, call = %call.summary(), "a standing rule lets a call run without asking");
                return (run_call(signal, call, Some(rule.id), actuators, acted).await, false);
            }
            let requested = Requested::new(call, skill, reason).with_votes(votes);
            let waiting = format!(
                "not run yet: it needs a person's approval ({}), asked for as {}. \
                 You will be told the outcome in this conversation; do not call it again meanwhile.",
                requested.reason,
                requested.token.as_str()
            );
            acted.requested.push(requested);
            Ok(ToolAnswer::from(waiting))
        }
    };
    (result, false)
}

/// `decision` after the consensus `gate`'s vote, with how the models voted
/// for a prompt, and whether they objected to the call. The vote is audited, its tokens counted, and its time and
/// refusals counted among the gates'.
async fn vote(
    gate: &Consensus,
    decision: Decision,
    seen: &Context,
    signal: &Signal,
    actuators: &Actuators<'_>,
    acted: &mut Acted,
) -> (Decision, Option<String>, bool) {
    let started = tokio::time::Instant::now();
    let reviewed = gate.review(decision, seen).await;
    let refused = matches!(&reviewed.decision, Decision::Reject { skill, .. } if skill == consensus::SKILL);
    let call = match &reviewed.decision {
        Decision::Run(call) | Decision::NeedsApproval { call, .. } | Decision::Reject { call, .. } => call,
    };
    acted.audit.push(consensus::voted(
        &signal.origin,
        &actuators.clock,
        call,
        &reviewed.tally,
        refused,
    ));
    crate::store::add_usage(&mut acted.voted, &reviewed.tally.used());
    actuators
        .skills
        .telemetry()
        .record(consensus::SKILL, started.elapsed(), refused);
    let objected = reviewed.tally.outcome() == VoteOutcome::Rejected;
    (reviewed.decision, reviewed.votes, objected)
}

/// Runs `call`, which the gates (or standing rule `rule`) let through, and audits it.
async fn run_call(
    signal: &Signal,
    call: ProposedCall,
    rule: Option<u64>,
    actuators: &Actuators<'_>,
    acted: &mut Acted,
) -> Result<ToolAnswer, ToolError> {
    let action = call.summary();
    let result = actuators
        .tools
        .answer_parsed(actuators.context, &call.tool, call.arguments)
        .await;
    let confinement = actuators.tools.confinement(&call.tool);
    let mut event = ran(
        &signal.origin,
        &actuators.clock,
        call.tool,
        action,
        result.is_err(),
        None,
    );
    if let Audited::ToolRan {
        rule: by_rule,
        confined,
        ..
    } = &mut event.what
    {
        *by_rule = rule;
        *confined = confinement;
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
            confined: None,
        },
    }
}

#[cfg(test)]
#[path = "act_tests.rs"]
mod tests;
