//! `getUpdates`, read one update at a time.
//!
//! teloxide parses a whole `getUpdates` answer at once, so one update it
//! cannot parse (JSON nested past serde_json's recursion limit, say) fails the
//! batch, and the same batch comes again at every poll: the gateway would
//! never move on. So the gateway sends `getUpdates` itself, with the bot's own
//! HTTP client and API URL, splits the answer into its updates as raw JSON
//! (which reads any depth) and parses each on its own: one that does not
//! parse becomes an [`Item::Unreadable`] with its `update_id`, for the poll
//! loop to log, count and step past.
//!
//! An answer that is not even readable as a whole comes back as
//! [`Answer::Unreadable`]; the poll loop isolates it (see [`crate::poll`]).
//! Neither an answer's text nor an update's content ever goes into a reason:
//! they may hold people's messages.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use teloxide::types::{AllowedUpdate, ResponseParameters, Update};
use teloxide::{ApiError, Bot, RequestError};

/// The parameters of one `getUpdates` call.
#[derive(Debug, Serialize)]
pub(crate) struct GetUpdates<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u8>,
    pub timeout: u32,
    pub allowed_updates: &'a [AllowedUpdate],
}

/// What Telegram answered to a `getUpdates` call.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The updates, in order, each parsed on its own.
    Updates(Vec<Item>),
    /// Telegram refused the call (`"ok": false`), as teloxide reports it.
    Refused(RequestError),
    /// The answer is not a Bot API answer at all; why, without its text.
    Unreadable(String),
}

/// One update of an answer.
#[derive(Debug)]
pub(crate) enum Item {
    Update(Box<Update>),
    /// An update that does not parse: its id, if even that cannot be read
    /// `None`, and why (without its content).
    Unreadable {
        update_id: Option<i64>,
        reason: String,
    },
}

/// The Bot API's answer envelope, its updates left unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    ok: bool,
    #[serde(borrow, default)]
    result: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    description: Option<ApiError>,
    #[serde(default)]
    parameters: Option<ResponseParameters>,
}

/// Just the id of an update; everything else in it is skipped unparsed.
#[derive(Deserialize)]
struct UpdateId {
    update_id: i64,
}

/// Calls `getUpdates` with `params`. `Err` is a failure of the call itself
/// (network, timeout), as teloxide reports it, so it is classified like any
/// other; the token is not in its text.
pub(crate) async fn get_updates(bot: &Bot, params: &GetUpdates<'_>) -> Result<Answer, RequestError> {
    let mut url = bot.api_url();
    url.path_segments_mut()
        .map_err(|()| RequestError::Api(ApiError::Unknown("the API URL cannot take a path".to_owned())))?
        .push(&format!("bot{}", bot.token()))
        .push("GetUpdates");
    let body = serde_json::to_vec(params).expect("getUpdates parameters serialize");
    let response = bot
        .client()
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await?;
    let text = response.text().await?;
    Ok(read_answer(&text))
}

/// Reads the text of a `getUpdates` answer.
pub(crate) fn read_answer(text: &str) -> Answer {
    let envelope: Envelope = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) => return Answer::Unreadable(reason(&error)),
    };
    match envelope {
        Envelope {
            ok: true,
            result: Some(updates),
            ..
        } => Answer::Updates(updates.into_iter().map(read_update).collect()),
        Envelope { ok: true, .. } => Answer::Unreadable("an answer without a result".to_owned()),
        Envelope {
            parameters: Some(ResponseParameters::RetryAfter(seconds)),
            ..
        } => Answer::Refused(RequestError::RetryAfter(seconds)),
        Envelope {
            parameters: Some(ResponseParameters::MigrateToChatId(chat)),
            ..
        } => Answer::Refused(RequestError::MigrateToChatId(chat)),
        Envelope {
            description: Some(error),
            ..
        } => Answer::Refused(RequestError::Api(error)),
        Envelope { .. } => Answer::Unreadable("a refusal without a description".to_owned()),
    }
}

/// Parses one update of an answer. teloxide's own parsing can panic on a
/// shape it does not expect (a reaction naming neither a user nor a chat
/// unwraps `None`), so a panic there is one more unreadable update, skipped
/// like the others rather than taking the gateway down with it.
fn read_update(raw: &RawValue) -> Item {
    let parsed = std::panic::catch_unwind(|| serde_json::from_str::<Update>(raw.get()));
    let reason = match parsed {
        Ok(Ok(update)) => return Item::Update(Box::new(update)),
        Ok(Err(error)) => reason(&error),
        Err(_) => "the update's parser gave up on its shape (it panicked)".to_owned(),
    };
    Item::Unreadable {
        update_id: serde_json::from_str::<UpdateId>(raw.get()).ok().map(|id| id.update_id),
        reason,
    }
}

/// Why JSON did not parse, without any of its content: a syntax error's text
/// is serde_json's fixed wording and a position, but a data error's text may
/// quote the value it did not expect.
fn reason(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => error.to_string(),
        Category::Data => format!(
            "not the expected shape at line {} column {}",
            error.line(),
            error.column()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
    }

    fn message(id: i64, text: &str) -> String {
        format!(
            r#"{{"update_id":{id},"message":{{"message_id":{id},"date":1700000000,"chat":{{"id":5,"type":"private","first_name":"A"}},"from":{{"id":5,"is_bot":false,"first_name":"A"}},"text":"{text}"}}}}"#
        )
    }

    /// Reads an answer of three updates, `poison` between two messages (ids 1
    /// and 3), checks that both messages were read, and gives what became of
    /// the one between: its id, and why it could not be read.
    fn between_two_messages(poison: &str) -> (Option<i64>, String) {
        let text = format!(
            r#"{{"ok":true,"result":[{},{poison},{}]}}"#,
            message(1, "a"),
            message(3, "b")
        );
        let Answer::Updates(mut items) = read_answer(&text) else {
            panic!("the answer is readable");
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[0], Item::Update(update) if update.id.0 == 1));
        assert!(matches!(&items[2], Item::Update(update) if update.id.0 == 3));
        match items.swap_remove(1) {
            Item::Unreadable { update_id, reason } => (update_id, reason),
            other => panic!("the update in between was read: {other:?}"),
        }
    }

    #[test]
    fn an_update_whose_parser_panics_is_unreadable_alone() {
        // A reaction with neither `user` nor `actor_chat`: teloxide unwraps
        // `None` while parsing it.
        let reaction = r#"{"update_id":2,"message_reaction":{"chat":{"id":5,"type":"private","first_name":"A"},"message_id":1,"date":1700000000,"old_reaction":[],"new_reaction":[]}}"#;
        let (update_id, reason) = between_two_messages(reaction);
        assert_eq!(update_id, Some(2));
        assert!(reason.contains("panicked"), "{reason}");
    }

    #[test]
    fn a_deeply_nested_update_is_unreadable_alone() {
        let deep = format!(
            r#"{{"update_id":2,"message":{{"secret":"do not log","x":{}}}}}"#,
            nested(200)
        );
        let (update_id, reason) = between_two_messages(&deep);
        assert_eq!(update_id, Some(2));
        assert!(!reason.contains("do not log"), "{reason}");
    }

    #[test]
    fn a_data_error_does_not_quote_the_content() {
        let text = r#"{"ok":true,"result":[{"update_id":"my secret words"}]}"#;
        let Answer::Updates(items) = read_answer(text) else {
            panic!("the answer is readable");
        };
        let Item::Unreadable { update_id, reason } = &items[0] else {
            panic!("the update does not parse");
        };
        assert_eq!(*update_id, None);
        assert!(!reason.contains("secret"), "{reason}");
    }

    #[test]
    fn refusals_are_teloxides_errors() {
        let retry = r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}"#;
        assert!(matches!(
            read_answer(retry),
            Answer::Refused(RequestError::RetryAfter(_))
        ));
        let refused = r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#;
        assert!(matches!(
            read_answer(refused),
            Answer::Refused(RequestError::Api(ApiError::InvalidToken))
        ));
    }

    #[test]
    fn text_that_is_no_answer_is_unreadable_without_quoting_it() {
        let Answer::Unreadable(reason) = read_answer("<html>secret proxy page</html>") else {
            panic!("not an answer");
        };
        assert!(!reason.contains("secret"), "{reason}");
        assert!(matches!(read_answer(r#"{"ok":true}"#), Answer::Unreadable(_)));
    }
}
