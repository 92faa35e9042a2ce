//! Bridged groups end to end, through the real daemon, against the fake Bot
//! API and the fake signal-cli: a Telegram group and a Signal group joined
//! by `[[bridges]]`. Text crosses both ways as "Name (Platform): text",
//! replies quote the right message on each side, the bot's own messages are
//! never relayed back, the assistant answers only when addressed and then
//! on both sides, and a group outside the bridge is never relayed; a burst
//! of a hundred messages arrives complete and in order through Telegram's
//! rate limit, photos and files cross both ways (one too large becomes a
//! line saying so), edits cross both ways and a deletion on Signal takes
//! the copy away on Telegram (Telegram tells bots of no deletions), and
//! `status` shows the bridge.

use crate::support;

use serde_json::Value;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::fake_signal::{ACCOUNT_UUID, FakeSignal, Sent as SignalSent, group_text_envelope};
use support::fake_telegram::{FakeTelegram, Sent};
use support::gateway_daemons::{signal_on, telegram_on, token_file};
use support::harness::{TestDaemon, WAIT};

const TOKEN: &str = "123456:bridge-token";
const ADA: i64 = 42;
/// The Telegram group in the bridge, and one that is not.
const GROUP: i64 = -100;
const LONE_GROUP: i64 = -200;
const SIGNAL_GROUP: &str = "ZmFtaWx5LWdyb3Vw";
const BOB: &str = "0b0b0b0b-0000-4000-8000-00000000000b";

struct Bridge {
    telegram: FakeTelegram,
    signal: FakeSignal,
    llm: FakeLlm,
    daemon: TestDaemon,
    _token_dir: tempfile::TempDir,
    /// The next Signal timestamp.
    clock: std::sync::atomic::AtomicU64,
}

/// Asks for `record` on "please record …" (and quotes what it is told of
/// the outcome), and echoes the rest.
fn model(request: &Value) -> Script {
    let text = last_user_text(request);
    if text.starts_with("please record") || text.starts_with(support::approvals::OUTCOME) {
        return support::approvals::model(request);
    }
    Script::Reply(format!("echo: {text}"))
}

async fn start() -> Bridge {
    start_with(|_| {}).await
}

/// The bridged daemon, then `adjust`ed.
async fn start_with(adjust: impl FnOnce(&mut passepartout::config::Config)) -> Bridge {
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let (token_dir, token_file) = token_file(TOKEN);
    let (api_url, endpoint) = (telegram.base_url(), signal.tcp_endpoint());
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            telegram_on(config, api_url, token_file, ADA);
            config.tools.require_approval = vec!["record".into()];
            config.telegram.allowed_chats = vec![GROUP, LONE_GROUP];
            signal_on(config, endpoint, BOB);
            config.signal.allowed_groups = vec![SIGNAL_GROUP.into()];
            config.bridges = vec![passepartout::config::BridgeConfig {
                name: "family".into(),
                chats: vec![format!("telegram:{GROUP}"), format!("signal:group:{SIGNAL_GROUP}")],
            }];
            adjust(config);
        },
        vec![std::sync::Arc::new(support::tools::Record::default())],
    )
    .await;
    Bridge {
        telegram,
        signal,
        llm,
        daemon,
        _token_dir: token_dir,
        clock: std::sync::atomic::AtomicU64::new(1_700_000_000_000),
    }
}

impl Bridge {
    /// Ada says `update`'s text in a Telegram group; the update is confirmed.
    async fn on_telegram(&self, update: Value) -> i64 {
        let message = update.get("message").unwrap_or(&update["edited_message"]);
        let message_id = message["message_id"].as_i64().unwrap();
        let id = self.telegram.push_update(update);
        self.telegram.wait_for_confirmed(id, WAIT).await;
        message_id
    }

    /// The next Signal timestamp.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Bob edits his Signal message sent at `target` to say `text`.
    fn bob_edits(&self, target: u64, text: &str) {
        let edit = support::fake_signal::group_edit_envelope(BOB, self.tick(), SIGNAL_GROUP, target, text);
        self.signal.push_envelope(edit);
    }

    /// Bob says `text` in the Signal group, quoting `quoted`; its timestamp.
    fn on_signal(&self, text: &str, quoted: Option<(u64, &str)>) -> u64 {
        let at = self.tick();
        self.signal
            .push_envelope(group_text_envelope(BOB, "Bob", at, SIGNAL_GROUP, text, quoted));
        at
    }

    /// The `n`th message sent to the Signal group, once it is sent.
    async fn signal_group(&self, n: usize) -> SignalSent {
        self.signal
            .nth_sent(n, WAIT, |s| s.group_id.as_deref() == Some(SIGNAL_GROUP))
            .await
    }

    /// Bob sends `attachment` in the Signal group, with `caption`; its timestamp.
    fn bob_sends_a_file(&self, caption: Option<&str>, attachment: Value) -> u64 {
        let at = self.tick();
        let mut envelope = support::fake_signal::attachment_envelope(BOB, at, caption, vec![attachment]);
        envelope["dataMessage"]["groupInfo"] = serde_json::json!({ "groupId": SIGNAL_GROUP, "type": "DELIVER" });
        envelope["sourceName"] = serde_json::json!("Bob");
        self.signal.push_envelope(envelope);
        at
    }

    fn signal_group_sent(&self) -> Vec<SignalSent> {
        self.signal
            .sent()
            .into_iter()
            .filter(|s| s.group_id.as_deref() == Some(SIGNAL_GROUP))
            .collect()
    }

    /// The `n`th message sent to Telegram chat `chat`, once it is sent.
    async fn telegram_chat(&self, chat: i64, n: usize) -> Sent {
        self.telegram.wait_for_sent_to(chat, n, WAIT).await[n - 1].clone()
    }
}

#[tokio::test]
async fn text_and_replies_cross_both_ways_and_nothing_is_relayed_back() {
    let mut bridge = start().await;
    let from_ada = bridge
        .on_telegram(bridge.telegram.group_message(GROUP, ADA, "dinner at *seven*?"))
        .await;
    let copy = bridge.signal_group(1).await;
    assert_eq!(copy.message.as_deref(), Some("User42 (Telegram): dinner at *seven*?"));
    assert!(!copy.text_styles.is_empty(), "the name is bold: {copy:?}");

    // Bob answers on Signal, quoting the copy: on Telegram it replies to Ada's message.
    let from_bob = bridge.on_signal("yes, I bring bread", Some((copy.timestamp, ACCOUNT_UUID)));
    let on_telegram = bridge.telegram_chat(GROUP, 1).await;
    assert!(on_telegram.text.contains("Bob"), "{on_telegram:?}");
    assert!(
        on_telegram.text.ends_with("(Signal): yes, I bring bread"),
        "{on_telegram:?}"
    );
    assert_eq!(on_telegram.reply_to_message_id, Some(from_ada));

    // The bot's own message, were it ever heard back, is not relayed: the
    // copy of Ada's next message is the next thing on Signal.
    let mut echo = bridge.telegram.group_message(GROUP, ADA, "an echo of the bridge");
    echo["message"]["from"] = bridge.telegram.bot_user();
    bridge.on_telegram(echo).await;
    bridge.signal.push_envelope(group_text_envelope(
        ACCOUNT_UUID,
        "Bot",
        bridge.tick(),
        SIGNAL_GROUP,
        "an echo on Signal",
        None,
    ));

    // Ada replies on Telegram to the copy of Bob's message: on Signal it quotes Bob's.
    bridge
        .on_telegram(bridge.telegram.reply_to(GROUP, ADA, "great", on_telegram.message_id))
        .await;
    let reply = bridge.signal_group(2).await;
    assert_eq!(reply.message.as_deref(), Some("User42 (Telegram): great"));
    assert_eq!(reply.quote_timestamp, Some(from_bob));
    assert_eq!(reply.quote_author.as_deref(), Some(BOB));
    bridge.on_signal("see you", None);
    let last = bridge.telegram_chat(GROUP, 2).await;
    assert!(last.text.ends_with("(Signal): see you"), "{last:?}");
    assert_eq!(bridge.signal_group_sent().len(), 2, "{:#?}", bridge.signal_group_sent());
    assert_eq!(
        bridge.telegram.sent().len(),
        2,
        "nothing else on Telegram: {:#?}",
        bridge.telegram.sent()
    );
    assert!(
        bridge.llm.requests().is_empty(),
        "people talking to each other never reach the model"
    );
    bridge.daemon.stop().await;
}

#[tokio::test]
async fn the_assistant_answers_when_addressed_on_every_side_and_a_lone_group_stays_alone() {
    let mut bridge = start().await;
    let question = bridge
        .on_telegram(
            bridge
                .telegram
                .group_message(GROUP, ADA, "@fake_bot what is for dinner"),
        )
        .await;
    let answer = bridge.telegram_chat(GROUP, 1).await;
    assert_eq!(answer.text, "echo: what is for dinner");
    assert_eq!(answer.reply_to_message_id, Some(question));
    let asked = bridge.signal_group(1).await;
    assert_eq!(asked.message.as_deref(), Some("User42 (Telegram): what is for dinner"));
    let answered = bridge.signal_group(2).await;
    assert_eq!(answered.message.as_deref(), Some("echo: what is for dinner"));
    assert_eq!(
        answered.quote_timestamp,
        Some(asked.timestamp),
        "it answers the copy of the question"
    );

    // The prompt, the answer to it and what the approved work gives stay
    // where it was asked.
    bridge
        .on_telegram(
            bridge
                .telegram
                .group_message(GROUP, ADA, "@fake_bot please record the menu"),
        )
        .await;
    let prompt = bridge.telegram_chat(GROUP, 2).await;
    assert!(
        prompt.reply_markup.is_some(),
        "the prompt, with its buttons: {prompt:?}"
    );
    let token = support::linked_pair::code_in(&prompt.text);
    bridge
        .on_telegram(bridge.telegram.group_message(GROUP, ADA, &format!("approve {token}")))
        .await;
    let outcome = bridge
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == GROUP && s.text.starts_with("final: "))
        .await;
    assert!(outcome.is_some(), "the outcome is told where it was asked");

    // A command is the asker's own business: answered, not relayed.
    bridge
        .on_telegram(bridge.telegram.group_message(GROUP, ADA, "/help"))
        .await;
    let help = bridge
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == GROUP && s.text.contains("/link"))
        .await;
    assert!(help.is_some(), "/help is answered");
    let on_signal: Vec<String> = bridge
        .signal_group_sent()
        .into_iter()
        .filter_map(|s| s.message)
        .collect();
    assert!(
        !on_signal
            .iter()
            .any(|m| m.ends_with(&format!("approve {token}")) || m.contains("final: ")),
        "the approval answer and the outcome stay where they were given: {on_signal:#?}"
    );
    let before_signal = bridge.signal_group_sent().len();

    // Mentioned on Signal: answered there, and on Telegram too.
    bridge
        .signal
        .push_envelope(support::fake_signal::group_mention_envelope(
            BOB,
            bridge.tick(),
            SIGNAL_GROUP,
            "and dessert?",
        ));
    let answered_here = bridge.signal_group(before_signal + 1).await;
    assert_eq!(answered_here.message.as_deref(), Some("echo: and dessert?"));
    let copy = bridge
        .telegram
        .sent_matching(WAIT, |s| {
            s.chat_id == GROUP && s.text.ends_with("(Signal): and dessert?")
        })
        .await
        .unwrap();
    let answer_copy = bridge
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == GROUP && s.text == "echo: and dessert?")
        .await
        .unwrap();
    assert_eq!(answer_copy.text, "echo: and dessert?");
    assert_eq!(answer_copy.reply_to_message_id, Some(copy.message_id));

    // A mention in a reply to a relayed copy is for the assistant.
    let mut asking = bridge
        .telegram
        .reply_to(GROUP, ADA, "@fake_bot and coffee?", copy.message_id);
    asking["message"]["entities"] = serde_json::json!([{ "type": "mention", "offset": 0, "length": 9 }]);
    bridge.on_telegram(asking).await;
    let coffee = bridge
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == GROUP && s.text == "echo: and coffee?")
        .await;
    assert!(coffee.is_some(), "answered: {:#?}", bridge.telegram.sent());
    let about_coffee = |s: &SignalSent| s.message.as_deref().is_some_and(|m| m.ends_with("and coffee?"));
    bridge.signal.nth_sent(2, WAIT, about_coffee).await;
    let before_lone = bridge.signal_group_sent().len();

    // A group outside the bridge is answered and never relayed.
    bridge
        .on_telegram(bridge.telegram.group_message(LONE_GROUP, ADA, "@fake_bot only here"))
        .await;
    assert_eq!(bridge.telegram_chat(LONE_GROUP, 1).await.text, "echo: only here");
    assert_eq!(
        bridge.signal_group_sent().len(),
        before_lone,
        "{:#?}",
        bridge.signal_group_sent()
    );
    bridge.daemon.stop().await;
}

#[tokio::test]
async fn a_burst_of_a_hundred_arrives_complete_and_in_order_through_the_rate_limit() {
    let mut bridge = start_with(|config| config.telegram.group_messages_per_minute = 6000).await;
    // Telegram says "too many" once, a third of the way in.
    bridge
        .telegram
        .fail_after("sendMessage", 33, support::fake_telegram::FakeFailure::RetryAfter(1));
    const BURST: usize = 100;
    for n in 0..BURST {
        bridge.on_signal(&format!("message {n}"), None);
    }
    // A failure bound, not a pace: the burst goes through the bridge and
    // the rate limit while a full test run loads both cores.
    let sent = bridge.telegram.wait_for_sent_to(GROUP, BURST, 3 * WAIT).await;
    let texts: Vec<String> = sent.iter().map(|s| s.text.clone()).collect();
    let expected: Vec<String> = (0..BURST).map(|n| format!("(Signal): message {n}")).collect();
    for (text, expected) in texts.iter().zip(&expected) {
        assert!(text.ends_with(expected.as_str()), "out of order or changed: {texts:#?}");
    }
    assert!(
        bridge.telegram.calls("sendMessage").len() > BURST,
        "the refused send was tried again"
    );
    let mut client = bridge.daemon.client("ops").await;
    let status = client
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
        .unwrap();
    let family = &status["bridges"][0];
    assert_eq!(family["name"], "family", "{status}");
    assert_eq!(family["chats"][0]["chat"], format!("telegram:{GROUP}"));
    assert!(family["chats"][0]["waiting"].is_u64(), "{status}");
    bridge.daemon.stop().await;
}

#[tokio::test]
async fn photos_cross_both_ways_and_a_file_too_large_becomes_a_note() {
    let mut bridge = start().await;
    // Bob's photo on Signal reaches the Telegram group as a photo.
    bridge
        .signal
        .add_attachment("sig-photo", b"\xFF\xD8 a signal photo".to_vec());
    let cake = bridge.bob_sends_a_file(
        Some("the cake"),
        support::fake_signal::attachment("sig-photo", "image/jpeg", Some("cake.jpg"), 20),
    );
    let uploaded = bridge.telegram.wait_for_uploads(1, WAIT).await.remove(0);
    assert_eq!(uploaded.chat_id, GROUP);
    assert_eq!(uploaded.file.bytes, b"\xFF\xD8 a signal photo");
    let caption = uploaded.caption.unwrap_or_default();
    assert!(
        caption.contains("Bob") && caption.ends_with("(Signal): the cake"),
        "{caption}"
    );

    // Its caption edited on Signal: the copy's caption on Telegram follows.
    bridge.bob_edits(cake, "the cheesecake");
    let edited = bridge
        .telegram
        .wait_for_calls("editMessageCaption", 1, WAIT)
        .await
        .remove(0);
    assert_eq!(edited["message_id"], uploaded.message_id);
    assert!(
        edited["caption"]
            .as_str()
            .unwrap()
            .ends_with("(Signal): the cheesecake"),
        "{edited}"
    );

    // Ada's photo on Telegram reaches the Signal group as an attachment.
    let telegram_photo = vec![7u8; 3000];
    bridge.telegram.add_file(
        &format!("AgACfake-x-{GROUP}"),
        support::fake_telegram::FakeFile::new(telegram_photo.clone()),
    );
    bridge
        .on_telegram(bridge.telegram.photo_message(GROUP, ADA, Some("the table")))
        .await;
    let sent = bridge.signal_group(1).await;
    let attachments = support::fake_signal::attachments_of(&sent.params).unwrap();
    assert_eq!(attachments.len(), 1, "{sent:?}");
    assert_eq!(attachments[0].bytes, telegram_photo);
    assert_eq!(sent.message.as_deref(), Some("User42 (Telegram): the table"));

    // A file larger than the daemon fetches becomes a line on the other side.
    let report = support::fake_signal::attachment("sig-big", "application/pdf", Some("report.pdf"), 900_000_000);
    bridge.bob_sends_a_file(None, report);
    let note = bridge.telegram_chat(GROUP, 1).await;
    assert!(
        note.text
            .ends_with("(Signal) sent report.pdf (900.0 MB), too large to pass on"),
        "{note:?}"
    );
    assert!(bridge.llm.requests().is_empty(), "nothing of it reached the model");
    bridge.daemon.stop().await;
}

#[tokio::test]
async fn edits_cross_both_ways_and_a_deletion_on_signal_takes_the_copy_away() {
    let mut bridge = start().await;
    let adas = bridge
        .on_telegram(bridge.telegram.group_message(GROUP, ADA, "see you at 7"))
        .await;
    let copy = bridge.signal_group(1).await;
    bridge
        .on_telegram(bridge.telegram.edited_message(GROUP, ADA, adas, "see you at 8"))
        .await;
    let edit = bridge.signal_group(2).await;
    assert_eq!(edit.message.as_deref(), Some("User42 (Telegram): see you at 8"));
    assert_eq!(
        edit.params["editTimestamp"], copy.timestamp,
        "the copy is edited: {edit:?}"
    );

    let bobs = bridge.on_signal("bring wine", None);
    let on_telegram = bridge.telegram_chat(GROUP, 1).await;
    bridge.bob_edits(bobs, "bring beer");
    let edited = bridge
        .telegram
        .wait_for_calls("editMessageText", 1, WAIT)
        .await
        .remove(0);
    assert_eq!(edited["message_id"], on_telegram.message_id);
    assert!(
        edited["text"].as_str().unwrap().ends_with("(Signal): bring beer"),
        "{edited}"
    );

    let deletion = support::fake_signal::group_delete_envelope(BOB, bridge.tick(), SIGNAL_GROUP, bobs);
    bridge.signal.push_envelope(deletion);
    let deleted = bridge.telegram.wait_for_calls("deleteMessage", 1, WAIT).await.remove(0);
    assert_eq!(deleted["message_id"], on_telegram.message_id);
    assert!(bridge.llm.requests().is_empty());
    bridge.daemon.stop().await;
}
