//! `/stop` during a streamed reply, through the real daemon on every
//! surface: on Telegram the partial reply is deleted, exactly once, even
//! when the deletion (or the stopped turn's commit) has to wait for the next
//! start; over the socket the client gets a `stopped` frame with the text
//! its draft showed; on Signal, which shows no drafts, nothing partial is
//! ever sent. On each, the answer to `/stop` says it was stopped.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use passepartout::config::StoreConfig;
use passepartout::store::Store;
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, InboundBody, MessageId, ReplyKind};
use passepartout_socket::ServerFrame;
use support::fake_llm::{FakeLlm, Script, StreamEnd, Streamed, last_user_text};
use support::fake_signal::{FakeSignal, text_envelope};
use support::fake_telegram::{FakeFailure, FakeTelegram};
use support::gateway_daemons::{with_signal, with_telegram};
use support::harness::{WAIT, send};
use support::process::{Running, write_config};

const TOKEN: &str = "123456:stopping-token";
const OWNER: i64 = 42;
const SIGNAL_OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
const ENDLESS: &str = "go on forever";

/// A model that writes a long answer a word every 20 ms to [`ENDLESS`],
/// and echoes anything else.
fn endless_model(llm: &FakeLlm) {
    llm.set_responder(|request| match last_user_text(request).as_str() {
        ENDLESS => {
            let words: Vec<String> = (0..2000).map(|n| format!("word{n}")).collect();
            let text = format!("Streamed reply: {}.", words.join(" "));
            Script::Stream(Streamed::words(&text).spaced(Duration::from_millis(20)))
        }
        _ => Script::Echo,
    });
}

/// How often the model was asked to answer [`ENDLESS`].
fn asked_endless(llm: &FakeLlm) -> usize {
    llm.requests()
        .iter()
        .filter(|request| last_user_text(request) == ENDLESS)
        .count()
}

/// The messages saying a turn was stopped that Telegram was asked to send.
fn stopped_answers(telegram: &FakeTelegram) -> usize {
    telegram
        .calls("sendMessage")
        .iter()
        .filter(|params| params["text"].as_str().is_some_and(|text| text.starts_with("Stopped.")))
        .count()
}

#[tokio::test]
async fn on_telegram_a_stopped_draft_is_deleted_once_even_when_that_waits_for_a_restart() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    endless_model(&llm);
    let (mut daemon, _token) = with_telegram(&llm, &telegram, TOKEN, OWNER, |_| {}).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, ENDLESS));
    let draft = telegram
        .sent_matching(WAIT, |sent| sent.text.starts_with("Streamed reply"))
        .await
        .expect("a draft");
    // Telegram refuses the deletion for a minute: after the stopped turn's
    // commit, and again after the `/stop`'s.
    telegram.fail_next("deleteMessage", FakeFailure::RetryAfter(60));
    telegram.fail_next("deleteMessage", FakeFailure::RetryAfter(60));
    telegram.push_update(telegram.text_message(OWNER, OWNER, "/stop"));
    telegram.wait_for_calls("deleteMessage", 2, WAIT).await;
    assert_eq!(
        stopped_answers(&telegram),
        0,
        "the answer to /stop waits behind the deletion"
    );

    daemon.restart(Vec::new()).await;
    let messages = telegram.stopped_draft_settles(OWNER, draft.message_id, WAIT).await;
    assert_eq!(messages.len(), 1, "only the answer to /stop: {messages:#?}");
    let deletions = telegram.calls("deleteMessage");
    assert_eq!(deletions.len(), 3, "refused twice, then done once: {deletions:#?}");
    assert!(deletions.iter().all(|params| params["message_id"] == draft.message_id));
    assert_eq!(stopped_answers(&telegram), 1, "the answer to /stop, once");
    assert_eq!(asked_endless(&llm), 1, "the stopped turn did not run again");
    daemon.stop().await;
}

/// The config of a daemon with Telegram on, `OWNER` allowed.
fn telegram_config(dir: &Path, llm: &FakeLlm, telegram: &FakeTelegram) -> PathBuf {
    let path = write_config(dir, &llm.base_url());
    let token_file = dir.join("telegram-token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "[telegram]\nenabled = true\ntoken_file = {token:?}\napi_url = {api:?}\nallowed_users = [{OWNER}]\npoll_timeout_s = 1\n",
        token = token_file.display().to_string(),
        api = telegram.base_url(),
    ));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_stopped_just_before_a_crash_is_not_run_again_and_its_draft_goes() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    endless_model(&llm);
    let dir = tempfile::tempdir().unwrap();
    let config = telegram_config(dir.path(), &llm, &telegram);
    let daemon = Running::start(&config).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, ENDLESS));
    let draft = telegram
        .sent_matching(WAIT, |sent| sent.text.starts_with("Streamed reply"))
        .await
        .expect("a draft");
    // The draft's next showing comes after its message was recorded.
    telegram.wait_for_calls("editMessageText", 1, WAIT).await;
    daemon.kill().await;
    // What a crash right after a `/stop` leaves, before the stopped turn
    // could commit: the `/stop` journaled, the running turn marked stopped.
    let store = Store::open(&dir.path().join("data").join("store"), &StoreConfig::default()).expect("the store opens");
    let key = ConversationKey::new(
        GatewayId::new("telegram").unwrap(),
        ChatId::new(OWNER.to_string()).unwrap(),
    );
    let pending = store.pending_for(&key).unwrap();
    assert_eq!(pending.len(), 1, "the stopped turn is pending");
    let turn = store.journal_entry(pending[0]).unwrap().expect("its journal entry");
    assert!(
        !store.draft_messages(turn.seq).unwrap().is_empty(),
        "its draft is recorded"
    );
    let mut stop = turn.inbound.clone();
    stop.message_id = MessageId::new("999999").unwrap();
    stop.body = InboundBody::Text { text: "/stop".into() };
    store.journal_accept(&stop, turn.accepted_at_ms).unwrap();
    store.mark_stopped(turn.seq).unwrap();
    store.durable().await.unwrap();
    drop(store);

    let daemon = Running::start(&config).await;
    let messages = telegram.stopped_draft_settles(OWNER, draft.message_id, WAIT).await;
    assert_eq!(messages.len(), 1, "only the answer to /stop: {messages:#?}");
    assert!(
        messages[0].1.starts_with("Stopped. Nothing of that turn was kept"),
        "{messages:#?}"
    );
    assert_eq!(telegram.calls("deleteMessage").len(), 1, "deleted once");
    assert_eq!(asked_endless(&llm), 1, "the stopped turn did not run again");
    let exit = daemon.terminate().await;
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test]
async fn over_the_socket_a_stopped_draft_ends_in_a_stopped_frame_with_what_it_showed() {
    let llm = FakeLlm::start().await;
    endless_model(&llm);
    let mut daemon = support::harness::TestDaemon::start(&llm).await;
    let mut client = daemon.client("halt").await;
    let id = send(&mut client, ENDLESS).await;
    let collect = async {
        let mut shown = String::new();
        let mut stop_id = None;
        loop {
            match client.next_event().await.expect("connection stays up") {
                ServerFrame::Draft {
                    in_reply_to: Some(answered),
                    text,
                    restart,
                    ..
                } if answered == id => {
                    if restart {
                        shown.clear();
                    }
                    shown.push_str(&text);
                    if stop_id.is_none() && shown.split_whitespace().count() >= 5 {
                        // Sent on a second connection, as another terminal would.
                        let mut other = daemon.client("halt").await;
                        stop_id = Some(send(&mut other, "/stop").await);
                    }
                }
                ServerFrame::Stopped {
                    in_reply_to: Some(answered),
                    text,
                    ..
                } if answered == id => return (shown, text, stop_id),
                ServerFrame::Reply { in_reply_to, text, .. } if in_reply_to.as_deref() == Some(id.as_str()) => {
                    panic!("a stopped turn has no reply: {text}")
                }
                _ => {}
            }
        }
    };
    let (shown, partial, stop_id) = tokio::time::timeout(WAIT, collect)
        .await
        .expect("a stopped frame in time");
    assert!(partial.starts_with("Streamed reply: word0"), "{partial}");
    assert_eq!(partial, shown, "the frame carries what the draft showed");
    let stop_id = stop_id.expect("/stop sent");
    let (kind, answer) = support::harness::reply_to(&mut client, &stop_id).await;
    assert_eq!(kind, ReplyKind::Notice);
    assert!(
        answer.starts_with("Stopped. Your message is kept, but no answer to it"),
        "{answer}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn on_signal_nothing_partial_is_ever_sent_and_the_stop_is_answered() {
    let llm = FakeLlm::start().await;
    let signal = FakeSignal::start().await;
    // The model writes part of an answer and never finishes it. Signal has
    // no draft to show it in, so the daemon asks for the answer whole and
    // holds no part of it; were it to stream, the part would be in hand
    // when the stop comes, and must not be sent.
    llm.set_responder(|request| match last_user_text(request).as_str() {
        ENDLESS => Script::Stream(Streamed::words("a partial answer that is").ending(StreamEnd::Hang)),
        _ => Script::Echo,
    });
    let mut daemon = with_signal(&llm, &signal, SIGNAL_OWNER, |_| {}).await;
    signal.push_envelope(text_envelope(SIGNAL_OWNER, 1_700_000_000_001, ENDLESS));
    llm.wait_for_requests(1, WAIT).await;
    signal.push_envelope(text_envelope(SIGNAL_OWNER, 1_700_000_000_002, "/stop"));
    let answer = signal
        .sent_matching(WAIT, |sent| {
            sent.message.as_deref().is_some_and(|text| text.starts_with("Stopped."))
        })
        .await
        .unwrap_or_else(|| panic!("the answer to /stop: {:#?}", signal.sent()));
    assert_eq!(answer.quote_timestamp, Some(1_700_000_000_002), "it answers the /stop");
    assert_eq!(signal.sent().len(), 1, "nothing but the answer: {:#?}", signal.sent());
    assert!(
        !answer.message.as_deref().unwrap_or_default().contains("partial"),
        "the stop's answer quotes no part of the reply: {answer:?}"
    );
    assert!(signal.deleted().is_empty(), "no draft, nothing to delete");
    daemon.stop().await;
}
