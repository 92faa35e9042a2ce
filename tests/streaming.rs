//! Replies shown while the model writes them, through the real daemon: on
//! Telegram a draft message edited at most about once a second and then
//! turned into the formatted reply (never a second copy), continued in new
//! messages past Telegram's limit, and removed when the turn is stopped;
//! over the socket, the text as it comes and a reply marked as the draft's
//! end; a stream cut mid-way never becomes the reply.

use crate::support;

use std::time::Duration;

use passepartout_gateway::ReplyKind;
use passepartout_socket::{Client, ServerFrame};
use support::fake_llm::{FakeLlm, Script, StreamEnd, Streamed, last_user_text};
use support::fake_telegram::FakeTelegram;
use support::gateway_daemons::with_telegram;
use support::harness::{TestDaemon, WAIT, send};
use support::logs::LogCapture;

const TOKEN: &str = "123456:streaming-token";
const OWNER: i64 = 42;

/// A reply of `words` words with some Markdown in it.
fn reply_of(words: usize) -> String {
    let body: Vec<String> = (0..words).map(|n| format!("word{n}")).collect();
    format!("**Streamed** reply: {}.", body.join(" "))
}

/// The model writes `text` a word every `gap`.
fn slowly(text: &str, gap: Duration) -> Script {
    Script::Stream(Streamed::words(text).spaced(gap))
}

/// When the daemon showed the draft, from its own log: the time of each
/// showing as its drafter took it, which is where the pace is kept. The
/// times the fake Bot API receives the calls are not: a call held up on a
/// loaded machine arrives late, and the next one on time, closer to it.
fn showings(logs: &LogCapture) -> Vec<Duration> {
    logs.text()
        .lines()
        .filter(|line| line.contains("showing the draft"))
        .map(|line| {
            let at = line
                .split_whitespace()
                .find_map(|field| field.strip_prefix("at_ms="))
                .unwrap_or_else(|| panic!("a showing without its time: {line}"));
            Duration::from_millis(at.parse().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_telegram_draft_is_edited_at_most_once_a_second_and_becomes_the_reply() {
    let logs = LogCapture::start();
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    let text = reply_of(150);
    // 150 words at 50 a second: three seconds of writing.
    let answer = text.clone();
    llm.set_responder(move |_| slowly(&answer, Duration::from_millis(20)));
    let (mut daemon, _token) = with_telegram(&llm, &telegram, TOKEN, OWNER, |_| {}).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "tell me"));

    let rendered = text.replace("**", "");
    let messages = telegram
        .chat_settles(OWNER, WAIT, |messages| messages.iter().any(|(_, t, _)| *t == rendered))
        .await;
    assert_eq!(
        messages.len(),
        1,
        "one message, the draft become the reply: {messages:#?}"
    );
    let entities = &messages[0].2;
    assert_eq!(entities[0]["type"], "bold", "finalised with the formatted text");
    let sends = telegram.calls("sendMessage");
    assert_eq!(sends.len(), 1, "no second message with the same text: {sends:#?}");
    assert!(
        sends[0]["reply_parameters"]["message_id"].as_i64().is_some(),
        "the draft quotes the question"
    );
    let edits = telegram.calls("editMessageText");
    assert!(edits.len() >= 2, "the draft grew in place: {} edits", edits.len());
    daemon.stop().await;
    let shown = showings(&logs);
    // The draft's first showing is its one send; every later one an edit,
    // and the reply the last edit: the log holds every draft call made.
    assert_eq!(
        shown.len(),
        edits.len(),
        "a showing logged for each draft call: {shown:?}"
    );
    assert!(edits.len() < 150, "fewer edits than words: {}", edits.len());
    for pair in shown.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_secs(1), "two showings {gap:?} apart: {shown:?}");
    }
}

#[tokio::test]
async fn a_long_telegram_draft_continues_in_new_messages_at_the_split_points() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    // About 7,000 characters: two messages, written in about two seconds.
    let text: String = (0..70)
        .map(|n| format!("Paragraph {n:02}: {}\n\n", "lorem ipsum ".repeat(7)))
        .collect();
    let pieces: Vec<String> = text.split_inclusive("\n\n").map(str::to_owned).collect();
    llm.set_responder(move |_| {
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        Script::Stream(Streamed::text(&pieces).spaced(Duration::from_millis(30)))
    });
    let (mut daemon, _token) = with_telegram(&llm, &telegram, TOKEN, OWNER, |_| {}).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "long"));
    let last = "Paragraph 69:";
    let messages = telegram
        .chat_settles(OWNER, WAIT, |messages| {
            messages.len() >= 2
                && messages
                    .iter()
                    .any(|(_, t, _)| t.contains(last) && t.trim_end().ends_with("ipsum"))
        })
        .await;
    assert_eq!(messages.len(), 2, "two parts, each a draft message: {messages:#?}");
    let joined: String = messages
        .iter()
        .map(|(_, t, _)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    for n in [0, 35, 69] {
        assert_eq!(
            joined.matches(&format!("Paragraph {n:02}:")).count(),
            1,
            "paragraph {n} once"
        );
    }
    assert_eq!(telegram.calls("sendMessage").len(), 2, "one send per part");
    daemon.stop().await;
}

#[tokio::test]
async fn a_stopped_turn_leaves_no_draft_behind() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    llm.set_responder(|request| match last_user_text(request).as_str() {
        "/stop" => Script::Echo,
        _ => slowly(&reply_of(2000), Duration::from_millis(20)),
    });
    let (mut daemon, _token) = with_telegram(&llm, &telegram, TOKEN, OWNER, |_| {}).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "go on forever"));
    // The draft is up.
    let draft = telegram
        .sent_matching(WAIT, |sent| sent.text.starts_with("Streamed reply"))
        .await
        .expect("a draft");
    telegram.push_update(telegram.text_message(OWNER, OWNER, "/stop"));
    let messages = telegram.stopped_draft_settles(OWNER, draft.message_id, WAIT).await;
    assert_eq!(messages.len(), 1, "only the answer to /stop: {messages:#?}");
    daemon.stop().await;
}

#[tokio::test]
async fn streaming_can_be_turned_off_for_telegram() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    let text = reply_of(100);
    let answer = text.clone();
    llm.set_responder(move |_| slowly(&answer, Duration::from_millis(20)));
    let (mut daemon, _token) = with_telegram(&llm, &telegram, TOKEN, OWNER, |config| {
        config.telegram.stream = Some(false);
    })
    .await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "tell me"));
    let rendered = text.replace("**", "");
    telegram
        .sent_matching(WAIT, |sent| sent.text == rendered)
        .await
        .expect("the reply");
    assert!(telegram.calls("editMessageText").is_empty(), "no draft edited");
    assert_eq!(telegram.calls("sendMessage").len(), 1);
    daemon.stop().await;
}

/// Every draft frame's text and the reply to `id`, with whether the reply
/// says it is what the draft became.
async fn streamed_reply(client: &mut Client, id: &str) -> (Vec<(String, bool)>, String, bool) {
    let collect = async {
        let mut drafts = Vec::new();
        loop {
            match client.next_event().await.expect("connection stays up") {
                ServerFrame::Draft {
                    in_reply_to: Some(answered),
                    text,
                    restart,
                    ..
                } if answered == id => drafts.push((text, restart)),
                ServerFrame::Reply {
                    in_reply_to: Some(answered),
                    text,
                    kind,
                    drafted,
                    ..
                } if answered == id && kind == ReplyKind::Answer => return (drafts, text, drafted),
                _ => {}
            }
        }
    };
    tokio::time::timeout(WAIT, collect).await.expect("a reply in time")
}

#[tokio::test]
async fn the_socket_gets_the_text_as_it_comes_and_a_reply_that_ends_it() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| {
        Script::Stream(Streamed::text(&["Once ", "upon ", "a ", "time."]).spaced(Duration::from_millis(10)))
    });
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("story").await;
    let id = send(&mut client, "tell me a story").await;
    let (drafts, reply, drafted) = streamed_reply(&mut client, &id).await;
    assert_eq!(reply, "Once upon a time.");
    assert!(drafted, "the reply says it is what the draft became");
    assert!(drafts.len() >= 2, "in pieces: {drafts:?}");
    assert!(drafts[0].1, "the first piece starts the draft");
    assert!(drafts[1..].iter().all(|(_, restart)| !restart));
    let joined: String = drafts.iter().map(|(text, _)| text.as_str()).collect();
    assert_eq!(joined, reply, "the pieces add up to the reply");
    daemon.stop().await;
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_not_the_reply_and_the_next_provider_starts_over() {
    let broken = FakeLlm::start().await;
    broken.set_responder(|_| {
        Script::Stream(
            Streamed::text(&["Half ", "an ", "answer"])
                .spaced(Duration::from_millis(10))
                .ending(StreamEnd::Abort),
        )
    });
    let whole = FakeLlm::start().await;
    whole.set_responder(|_| Script::Stream(Streamed::text(&["The ", "whole ", "answer."])));
    let second = whole.base_url();
    let mut daemon = TestDaemon::start_with(
        &broken,
        |config| {
            let mut fallback = config.llm.providers[0].clone();
            fallback.name = "whole".into();
            fallback.base_url = second;
            config.llm.providers.push(fallback);
        },
        Vec::new(),
    )
    .await;
    let mut client = daemon.client("cut").await;
    let id = send(&mut client, "answer me").await;
    let (drafts, reply, drafted) = streamed_reply(&mut client, &id).await;
    assert_eq!(reply, "The whole answer.");
    assert!(drafted);
    let restarts: Vec<_> = drafts.iter().filter(|(_, restart)| *restart).collect();
    assert_eq!(
        restarts.len(),
        2,
        "the broken text, then the whole one anew: {drafts:?}; asked {} and {}",
        broken.requests().len(),
        whole.requests().len()
    );
    let after_restart: String = drafts
        .iter()
        .skip_while(|(text, restart)| !(*restart && text.starts_with("The")))
        .map(|(text, _)| text.as_str())
        .collect();
    assert_eq!(after_restart, reply, "what follows the restart is the reply alone");
    daemon.stop().await;
}
