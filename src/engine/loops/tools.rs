//! Scheduling from a conversation: `remind` makes a reminder (text sent as
//! it is) and `schedule` a task (a prompt run by the assistant, with its
//! tools and approvals; by default itself approved by a person first), each
//! running in the conversation on a [`Schedule`]; `schedules` lists the
//! conversation's loops; `cancel_schedule` stops one for good ("stop
//! reminding me about X"). The loops are kept in the store, so they
//! survive restarts ([`Schedules`]). A loop's own iteration may not
//! schedule more loops.

use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use crate::engine::loops::next_sleep::SetNextSleep;
use crate::engine::loops::prompt::LoopPrompt;
use crate::engine::loops::schedules::{BookError, Schedules};
use crate::engine::loops::spec::{LoopName, LoopSpec};
use crate::engine::loops::status::human;
use crate::foundation::clock::schedule::Schedule;
use crate::model::llm::ToolSpec;
use crate::safety::tools::{Tool, ToolContext, ToolError, parse_arguments};

/// The loops' tools: a loop's `set_next_sleep`, and the four that share
/// `schedules`.
pub fn tools(schedules: &Arc<Schedules>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SetNextSleep),
        Arc::new(RemindTool(schedules.clone())),
        Arc::new(ScheduleTool(schedules.clone())),
        Arc::new(ListSchedules(schedules.clone())),
        Arc::new(CancelSchedule(schedules.clone())),
    ]
}

/// The specs of the tools [`tools`] sets up, without a store: what the
/// configuration's tool names are checked against.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        SetNextSleep.spec(),
        remind_spec(),
        schedule_spec(),
        list_spec(),
        cancel_spec(),
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

/// What a reminder or a task says, besides when.
enum Says {
    Message(String),
    Task(String),
}

/// Makes the loop, in the conversation of `context`, and says so.
async fn make(
    schedules: &Arc<Schedules>,
    context: &ToolContext,
    name: String,
    when: &str,
    says: Says,
) -> Result<String, ToolError> {
    refuse_loops(context)?;
    let name = LoopName::new(name).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
    let now_ms = schedules.now_ms();
    let schedule = Schedule::parse(when, schedules.zone(), now_ms)
        .map_err(|error| ToolError::InvalidArguments(format!("when: {error}. Forms: {GRAMMAR}")))?;
    let mut spec = match says {
        Says::Message(text) if !text.trim().is_empty() => LoopSpec::message(name, text),
        Says::Task(task) if !task.trim().is_empty() => LoopSpec::task(name, task),
        _ => return Err(ToolError::InvalidArguments("the text must not be empty".into())),
    };
    let next = schedule.next_after(now_ms);
    let described = format!("\"{}\", {schedule}", spec.name);
    spec.schedule = Some(schedule);
    spec.output = Some(context.conversation.clone());
    schedules.add(spec, &context.sender).await.map_err(refused)?;
    let mut answer = format!("Scheduled {described}");
    if let Some(next) = next {
        let _ = write!(answer, "; the first run is in {}", human(next.saturating_sub(now_ms)));
    }
    Ok(answer + ".")
}

fn parameters(what: &str, description: &str) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "short, unique, no spaces, e.g. stretch-break" },
            "when": { "type": "string" },
            what: { "type": "string", "description": description },
        },
        "required": ["name", "when", what],
        "additionalProperties": false,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemindArguments {
    name: String,
    when: String,
    message: String,
}

/// `remind`.
pub struct RemindTool(Arc<Schedules>);

/// The spec of `remind`.
fn remind_spec() -> ToolSpec {
    ToolSpec {
        name: "remind".into(),
        description: format!(
            "Remind this conversation: `message` is sent as it is, when due. `when` is one of: \
             {GRAMMAR}. `name` is a short unique name without spaces, used to list or cancel it."
        ),
        parameters: parameters("message", "the reminder's text"),
    }
}

#[async_trait]
impl Tool for RemindTool {
    fn spec(&self) -> ToolSpec {
        remind_spec()
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let RemindArguments { name, when, message } = parse_arguments(arguments)?;
        make(&self.0, context, name, &when, Says::Message(message)).await
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleArguments {
    name: String,
    when: String,
    task: String,
}

/// `schedule`: a task the assistant will carry out by itself, again and
/// again, so by default it needs a person's approval once, when it is set
/// up (`tools.require_approval`).
pub struct ScheduleTool(Arc<Schedules>);

/// The spec of `schedule`.
fn schedule_spec() -> ToolSpec {
    ToolSpec {
        name: "schedule".into(),
        description: format!(
            "Schedule a task in this conversation: instructions you will carry out, with your \
             tools, when due. For a plain reminder use `remind`. `when` is one of: {GRAMMAR}. \
             `name` is a short unique name without spaces, used to list or cancel it."
        ),
        parameters: parameters("task", "what to do each time"),
    }
}

#[async_trait]
impl Tool for ScheduleTool {
    fn spec(&self) -> ToolSpec {
        schedule_spec()
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let ScheduleArguments { name, when, task } = parse_arguments(arguments)?;
        make(&self.0, context, name, &when, Says::Task(task)).await
    }
}

/// `schedules`.
pub struct ListSchedules(Arc<Schedules>);

/// The spec of `schedules`.
fn list_spec() -> ToolSpec {
    ToolSpec {
        name: "schedules".into(),
        description: "List the reminders and scheduled tasks of this conversation: name, what, when.".into(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

#[async_trait]
impl Tool for ListSchedules {
    fn spec(&self) -> ToolSpec {
        list_spec()
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

/// The spec of `cancel_schedule`.
fn cancel_spec() -> ToolSpec {
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

#[async_trait]
impl Tool for CancelSchedule {
    fn spec(&self) -> ToolSpec {
        cancel_spec()
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let CancelArguments { name } = parse_arguments(arguments)?;
        refuse_loops(context)?;
        self.0.remove_in(&context.conversation, &name).await.map_err(refused)?;
        Ok(format!("Cancelled \"{name}\"; it will not run again."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::clock::Clock;
    use crate::foundation::clock::schedule::Zone;

    #[test]
    fn the_specs_are_those_of_the_tools_set_up() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let schedules = Arc::new(Schedules::new(store, Clock::start(), Zone::utc()));
        let built: Vec<ToolSpec> = tools(&schedules).iter().map(|tool| tool.spec()).collect();
        assert_eq!(specs(), built);
    }
}
