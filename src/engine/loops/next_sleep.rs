//! `set_next_sleep`: in a loop's iteration, the model chooses how long the
//! loop sleeps before the next one ("nothing changed; look again in an
//! hour"). The choice is clamped to the loop's sleep bounds and reported to
//! the loop runtime when the iteration ends. The tool is offered only in a
//! loop's iterations ([`LoopTurn`], which is the tools' [`InLoop`]);
//! anywhere else it is refused.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use crate::engine::loops::sleep::SleepBounds;
use crate::engine::loops::spec::LoopName;
use crate::model::llm::ToolSpec;
use crate::safety::tools::{InLoop, SET_NEXT_SLEEP, Tool, ToolContext, ToolError, parse_arguments};

/// The loop whose iteration a turn is, and what its tools chose.
#[derive(Debug)]
pub struct LoopTurn {
    pub name: LoopName,
    pub bounds: SleepBounds,
    /// A schedule, not the sleep, decides when the loop runs next.
    pub scheduled: bool,
    chosen: Mutex<Option<Duration>>,
}

impl LoopTurn {
    pub fn new(name: LoopName, bounds: SleepBounds, scheduled: bool) -> Arc<Self> {
        Arc::new(Self {
            name,
            bounds,
            scheduled,
            chosen: Mutex::new(None),
        })
    }

    /// The sleep the model chose, within the bounds, if it chose one.
    pub fn chosen(&self) -> Option<Duration> {
        *self.chosen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl InLoop for LoopTurn {
    fn choose_next_sleep(&self, asked: Duration) -> Result<String, ToolError> {
        if self.scheduled {
            return Err(ToolError::Refused(format!(
                "loop \"{}\" runs on a schedule, which decides when it runs next",
                self.name
            )));
        }
        let sleep = self.bounds.clamp(asked);
        *self.chosen.lock().unwrap_or_else(|p| p.into_inner()) = Some(sleep);
        let mut answer = format!(
            "Loop \"{}\" sleeps about {} s before its next iteration",
            self.name,
            sleep.as_secs()
        );
        if sleep != asked {
            answer += &*format!(
                " (the bounds are {} s to {} s)",
                self.bounds.min.as_secs(),
                self.bounds.max.as_secs()
            );
        }
        Ok(answer + ".")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    seconds: u64,
}

/// The tool.
pub struct SetNextSleep;

#[async_trait]
impl Tool for SetNextSleep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SET_NEXT_SLEEP.into(),
            description: "Choose how long this background loop sleeps before its next iteration, in seconds. \
                          The loop's bounds apply: a shorter or longer sleep is moved into them."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": { "seconds": { "type": "integer", "minimum": 1 } },
                "required": ["seconds"],
                "additionalProperties": false,
            }),
        }
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let Arguments { seconds } = parse_arguments(arguments)?;
        let Some(turn) = &context.loop_turn else {
            return Err(ToolError::Refused(
                "only a background loop's iteration can choose its next sleep".into(),
            ));
        };
        turn.choose_next_sleep(Duration::from_secs(seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::tools::testing::context;

    fn bounds() -> SleepBounds {
        SleepBounds {
            min: Duration::from_secs(60),
            max: Duration::from_secs(3600),
            default: Duration::from_secs(600),
        }
    }

    #[tokio::test]
    async fn the_choice_is_clamped_and_kept() {
        let turn = LoopTurn::new(LoopName::new("mail").unwrap(), bounds(), false);
        let mut context = context();
        context.loop_turn = Some(turn.clone());
        let answer = SetNextSleep.call(&context, json!({ "seconds": 5 })).await.unwrap();
        assert!(
            answer.contains("about 60 s") && answer.contains("bounds are 60 s to 3600 s"),
            "{answer}"
        );
        assert_eq!(turn.chosen(), Some(Duration::from_secs(60)));
        SetNextSleep.call(&context, json!({ "seconds": 900 })).await.unwrap();
        assert_eq!(turn.chosen(), Some(Duration::from_secs(900)), "the last choice counts");
    }

    #[tokio::test]
    async fn outside_a_loop_or_on_a_schedule_it_is_refused() {
        let error = SetNextSleep
            .call(&context(), json!({ "seconds": 5 }))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ToolError::Refused(ref m) if m.contains("only a background loop")),
            "{error}"
        );
        let mut scheduled = context();
        let turn = LoopTurn::new(LoopName::new("daily").unwrap(), bounds(), true);
        scheduled.loop_turn = Some(turn.clone());
        let error = SetNextSleep
            .call(&scheduled, json!({ "seconds": 5 }))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ToolError::Refused(ref m) if m.contains("schedule")),
            "{error}"
        );
        assert_eq!(turn.chosen(), None);
        let error = SetNextSleep
            .call(&scheduled, json!({ "seconds": "soon" }))
            .await
            .unwrap_err();
        assert!(matches!(error, ToolError::InvalidArguments(_)), "{error}");
    }
}
