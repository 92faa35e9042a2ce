//! `current_time`: the date and time, in the machine's time zone and UTC, so
//! the model need not guess.

use async_trait::async_trait;
use serde_json::json;

use super::{Tool, ToolContext, ToolError};
use crate::model::llm::ToolSpec;

pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "current_time".into(),
            description: "The current date and time, with weekday and time zone.".into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        if arguments.as_object().is_some_and(|a| !a.is_empty()) {
            return Err(ToolError::InvalidArguments("current_time takes no arguments".into()));
        }
        let now = jiff::Zoned::now();
        Ok(format!(
            "{} ({}), UTC {}",
            now.strftime("%A %Y-%m-%d %H:%M:%S %:z"),
            now.time_zone().iana_name().unwrap_or("local time"),
            now.timestamp().strftime("%Y-%m-%dT%H:%M:%SZ"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::tools::testing;

    #[tokio::test]
    async fn it_tells_the_date_in_utc_too() {
        let out = CurrentTime.call(&testing::context(), json!({})).await.unwrap();
        let year = jiff::Timestamp::now().strftime("%Y").to_string();
        assert!(out.contains(&format!("UTC {year}-")), "{out}");
        assert!(CurrentTime.call(&testing::context(), json!({"tz": "x"})).await.is_err());
    }
}
