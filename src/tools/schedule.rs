//! Scheduling from a conversation: `schedule` makes a reminder (text sent
//! as it is) or a task (a prompt run by the assistant, with its tools and
//! approvals) that runs in the conversation on a [`Schedule`]; `schedules`
//! lists the conversation's loops; `cancel_schedule` stops one for good
//! ("stop reminding me about X"). The loops are kept in the store, so they
//! survive restarts ([`Schedules`]). A loop's own iteration may not
//! schedule more loops.

use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::llm::ToolSpec;
use crate::loops::schedule::Schedule;
use crate::loops::spec::{LoopName, LoopSpec};
use crate::loops::status::human;
use crate::pipeline::LoopPrompt;
use crate::schedules::{BookError, Schedules};

/// The three tools, sharing `schedules`.
pub fn tools(schedules: &Arc<Schedules>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ScheduleTool(schedules.clone())),
        Arc::new(ListSchedules(schedules.clone())),
        Arc::new(CancelSchedule(schedules.clone())),
    ]
}

const GRAMMAR: &str = "`in 20 minutes`, `at 09:00`, `at 2026-11-23 09:00`, `every 15 minutes`, \
                       `every hour`, `daily at 07:30`, `cron 0 7 * * 1-5`; the daily, cron and at forms \
                       may end with an IANA zone such as Europe/Paris";

/// A loop — in its iteration, or in the turn that finishes an action of
/// its that was approved — may not change what is scheduled.
fn refuse_loops(context: &ToolContext) -> Result<(), ToolError> {
    if context.loop_turn.is_some() || LoopPrompt::is_loop(&context.sender) {
        return Err(ToolError::Refused(
            "a background loop cannot change the schedules; a person can".into(),
        ));
    }
    Ok(())
}

fn refused(error: BookError) -> ToolError {
    match error {
        BookError::Store(_) | BookError::Encode(_) | BookError::NotReady => ToolError::Failed(error.to_string()),
        other => ToolError::Refused(other.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleArguments {
    name: String,
    when: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    task: Option<String>,
}

/// `schedule`.
pub struct ScheduleTool(Arc<Schedules>);

#[async_trait]
impl Tool for ScheduleTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "schedule".into(),
            description: format!(
                "Schedule a reminder or a recurring task in this conversation. Give `message` for a \
                 reminder (sent as it is, at the time) or `task` for instructions you will carry out \
                 then, with your tools. `when` is one of: {GRAMMAR}. `name` is a short unique name \
                 without spaces, used to list or cancel it."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "short, unique, no spaces, e.g. stretch-break" },
                    "when": { "type": "string" },
                    "message": { "type": "string", "description": "the reminder's text" },
                    "task": { "type": "string", "description": "what to do each time" },
                },
                "required": ["name", "when"],
                "additionalProperties": false,
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let arguments: ScheduleArguments = parse_arguments(arguments)?;
        refuse_loops(context)?;
        let name = LoopName::new(arguments.name).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let schedules = &self.0;
        let now_ms = schedules.now_ms();
        let schedule = Schedule::parse(&arguments.when, schedules.zone(), now_ms)
            .map_err(|error| ToolError::InvalidArguments(format!("when: {error}. Forms: {GRAMMAR}")))?;
        let mut spec = match (arguments.message, arguments.task) {
            (Some(text), None) if !text.trim().is_empty() => LoopSpec::message(name, text),
            (None, Some(task)) if !task.trim().is_empty() => LoopSpec::task(name, task),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "give exactly one of `message` (a reminder) or `task` (something to do), not empty".into(),
                ));
            }
        };
        let next = schedule.next_after(now_ms);
        spec.schedule = Some(schedule);
        spec.output = Some(context.conversation.clone());
        let described = format!(
            "\"{}\", {}",
            spec.name,
            spec.schedule.as_ref().map(ToString::to_string).unwrap_or_default()
        );
        schedules.add(spec, &context.sender).await.map_err(refused)?;
        let mut answer = format!("Scheduled {described}");
        if let Some(next) = next {
            let _ = write!(answer, "; the first run is in {}", human(next.saturating_sub(now_ms)));
        }
        Ok(answer + ".")
    }
}

/// `schedules`.
pub struct ListSchedules(Arc<Schedules>);

#[async_trait]
impl Tool for ListSchedules {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "schedules".into(),
            description: "List the reminders and scheduled tasks of this conversation: name, what, when.".into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        if arguments.as_object().is_some_and(|a| !a.is_empty()) {
            return Err(ToolError::InvalidArguments("schedules takes no arguments".into()));
        }
        let listed = self.0.listed_in(&context.conversation);
        if listed.is_empty() {
            return Ok("This conversation has no reminders or scheduled tasks.".into());
        }
        let now_ms = self.0.now_ms();
        let mut out = String::new();
        for status in listed {
            let _ = write!(
                out,
                "- {}: {}",
                status.name,
                status.what.as_deref().unwrap_or("(built in)")
            );
            if let Some(schedule) = &status.schedule {
                let _ = write!(out, " — {schedule}");
            }
            if let Some(wake) = status.next_wake_ms {
                let _ = write!(out, ", next in {}", human(wake.saturating_sub(now_ms)));
            }
            out.push('\n');
        }
        Ok(out)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelArguments {
    name: String,
}

/// `cancel_schedule`.
pub struct CancelSchedule(Arc<Schedules>);

#[async_trait]
impl Tool for CancelSchedule {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "cancel_schedule".into(),
            description: "Stop a reminder or scheduled task of this conversation for good, by name \
                          (see `schedules` for the names)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"],
                "additionalProperties": false,
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let CancelArguments { name } = parse_arguments(arguments)?;
        refuse_loops(context)?;
        self.0.remove_in(&context.conversation, &name).await.map_err(refused)?;
        Ok(format!("Cancelled \"{name}\"; it will not run again."))
    }
}
