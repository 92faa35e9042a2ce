//! What the benchmarks of a tool-calling turn share: the fake model that
//! calls the tool a message names (`call NAME {json}`) and answers `done`
//! once a tool result is back, and the figures they print (median and 99th
//! percentile, in milliseconds).

use std::time::Duration;

use serde_json::Value;

use crate::fake_llm::{Script, last_message, last_user_text};

/// The fake model: `call TOOL {json}` calls TOOL; a tool's result is
/// answered `done`; anything else is echoed.
pub fn model(request: &Value) -> Script {
    if last_message(request)["role"] == "tool" {
        return Script::Reply("done".into());
    }
    let text = last_user_text(request);
    match text.strip_prefix("call ").and_then(|rest| rest.split_once(' ')) {
        Some((name, arguments)) => Script::ToolCall {
            name: name.into(),
            arguments: arguments.into(),
        },
        None => Script::Echo,
    }
}

/// The median and 99th percentile of `samples`, in milliseconds.
pub fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

/// `"NAME":{"p50_ms":…,"p99_ms":…}`, for the printed JSON line.
pub fn figures(name: &str, (p50, p99): (f64, f64)) -> String {
    format!(r#""{name}":{{"p50_ms":{p50:.3},"p99_ms":{p99:.3}}}"#)
}
