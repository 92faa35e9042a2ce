//! Whether the model answers, found by asking it one short question with a
//! small limit on the answer: a server that lists its models may still not
//! have the one named, or refuse to run it, and only a question shows that.
//! When the server says the model is not there (HTTP 404), the models it
//! offers are listed, the closest to the name given first.

use std::sync::Arc;

use crate::config::{ProviderConfig, Secret};
use crate::foundation::checkup::{Check, Level};
use crate::model::llm::{ChatMessage, ChatModel, ChatRequest, LlmError};

/// The question asked.
const QUESTION: &str = "Reply with OK.";
/// Room for "OK" and a little more, at next to no cost.
const ANSWER_TOKENS: u32 = 16;
/// How much of the answer is shown.
const SHOWN_CHARS: usize = 60;
/// How many of the models offered are named.
const LISTED_MODELS: usize = 20;

/// Asks the model `provider` names, with `key`: its answer, or why there
/// is none and what to do.
pub async fn model(provider: &ProviderConfig, key: Option<&Secret>) -> Check {
    let part = format!("model {}", provider.name);
    let client = match crate::model::llm::provider_client(provider, key.cloned()) {
        Ok(client) => client,
        Err(error) => return Check::new(part, Level::Failed, error.to_string(), Some("check base_url".into())),
    };
    let request = ChatRequest {
        messages: vec![ChatMessage::user(QUESTION)],
        tools: Arc::new([]),
        max_tokens: Some(ANSWER_TOKENS),
    };
    let mut answer = client.complete(&request).await;
    // Some servers refuse the limit under that name (OpenAI's newer
    // models): asked again without one, the answer is short all the same.
    if matches!(answer, Err(LlmError::Rejected { status: 400, .. })) {
        let unlimited = ChatRequest {
            max_tokens: None,
            ..request
        };
        answer = client.complete(&unlimited).await;
    }
    match answer {
        Ok(response) => Check::new(
            part,
            Level::Ok,
            format!(
                "{}, asked to reply with OK, answered {}",
                provider.model,
                shown(response.content.as_deref())
            ),
            None,
        ),
        Err(error) => {
            let fix = match &error {
                LlmError::Rejected { status: 404, .. } => not_there(client.as_ref(), &provider.model).await,
                other => crate::operator::doctor::provider_fix(other).to_owned(),
            };
            Check::new(
                part,
                Level::Failed,
                format!("{}: {error}", client.endpoint()),
                Some(fix),
            )
        }
    }
}

/// The answer, quoted, on one line and cut short.
fn shown(answer: Option<&str>) -> String {
    let text = answer
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if text.is_empty() {
        return "with nothing (it may need more room to answer; it does answer)".into();
    }
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{:?}", format!("{}…", &text[..cut])),
        None => format!("{text:?}"),
    }
}

/// What to do about a model the server does not have: the ones it offers.
async fn not_there(client: &dyn ChatModel, wanted: &str) -> String {
    match client.model_names().await {
        Ok(names) if !names.is_empty() => offered(&names, wanted),
        _ => format!("the server has no model {wanted:?}: check its name (--model-name)"),
    }
}

/// The models `names` offered, the closest to `wanted` first.
fn offered(names: &[String], wanted: &str) -> String {
    let closest = crate::safety::skills::closest(wanted, names.iter().map(String::as_str));
    let mut listed: Vec<&str> = closest.into_iter().collect();
    listed.extend(names.iter().map(String::as_str).filter(|name| Some(*name) != closest));
    let more = listed.len().saturating_sub(LISTED_MODELS);
    listed.truncate(LISTED_MODELS);
    let mut text = format!("the server has no model {wanted:?}; it offers: {}", listed.join(", "));
    if more > 0 {
        text.push_str(&format!(" (and {more} more)"));
    }
    if let Some(closest) = closest {
        text.push_str(&format!("; did you mean {closest:?}?"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_offered_come_closest_first_and_a_long_list_is_cut() {
        let names: Vec<String> = ["qwen2.5:7b", "llama3.2", "mistral"].map(String::from).to_vec();
        assert_eq!(
            offered(&names, "llama3.3"),
            "the server has no model \"llama3.3\"; it offers: llama3.2, qwen2.5:7b, mistral; did you mean \"llama3.2\"?"
        );
        let many: Vec<String> = (0..25).map(|n| format!("m{n}")).collect();
        let text = offered(&many, "gpt-9");
        assert!(text.ends_with("m19 (and 5 more)"), "{text}");
    }

    #[test]
    fn the_answer_is_shown_on_one_line_and_cut_short() {
        assert_eq!(shown(Some(" OK\n")), "\"OK\"");
        assert!(shown(Some("")).contains("with nothing"));
        assert!(shown(Some(&"word ".repeat(40))).ends_with("…\""));
    }
}
