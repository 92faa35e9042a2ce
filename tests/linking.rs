//! Linking end to end, against the fake Bot API and the fake signal-cli
//! inside the real daemon: `/link` on Telegram answers a code, `/link CODE`
//! on Signal makes the two accounts one person and both sides are told; a
//! wrong code is refused; a fact told on Telegram is recalled on Signal,
//! and one told on Signal is not recalled in a Telegram group;
//! the person's own Telegram approval is answered from Signal while someone
//! else's is not; a conversation handed off from Telegram goes on on
//! Signal, and `/continue` brings it back; `/link` in a group is refused,
//! and a code said in a group, addressed to the bot or not, dies at once; `passepartout people`,
//! `link` and `people unlink` work from the terminal; no code ever reaches
//! the model.

use crate::support;

use passepartout_gateway::GroupMode;
use serde_json::{Value, json};
use support::fake_llm::{Script, last_message, last_user_text};
use support::fake_signal::group_text_envelope;
use support::harness::WAIT;
use support::linked_pair::{ADA_SIGNAL, ADA_TELEGRAM, BOB_TELEGRAM, GROUP, code_in, linked, start, start_in};

/// Remembers and recalls when told to, asks for `record` on "please record",
/// reports what a tool said, and echoes the rest.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("done: {}", last["content"].as_str().unwrap_or_default()));
    }
    let tool = |name: &str, arguments: Value| Script::ToolCall {
        name: name.into(),
        arguments: arguments.to_string(),
    };
    match last_user_text(request).as_str() {
        "remember the locker" => tool("remember", json!({"fact": "the locker code is 4711"})),
        "remember the bike" => tool("remember", json!({"fact": "the bike is blue"})),
        "what is my locker code?" => tool("recall", json!({})),
        _ => support::approvals::model(request),
    }
}

#[tokio::test]
async fn a_telegram_and_a_signal_account_linked_share_memory_and_the_persons_approvals() {
    let mut setup = start(model).await;
    let asked = setup.on_telegram(ADA_TELEGRAM, "/link").await;
    assert!(asked.text.starts_with("Your link code is"), "{}", asked.text);
    let code = code_in(&asked.text);

    let wrong = setup.on_signal("/link ABCDEFGH").await;
    assert_eq!(wrong, "Not linked: no such link code (or it expired).");
    let told_here = setup.on_signal(&format!("/link {}", code.to_lowercase())).await;
    assert!(told_here.starts_with("Linked: this chat and User42"), "{told_here}");
    let told_there = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await[1]
        .text
        .clone();
    assert!(
        told_there.starts_with("Linked: this chat and Ada (signal:"),
        "{told_there}"
    );

    let remembered = setup.on_telegram(ADA_TELEGRAM, "remember the locker").await;
    assert!(remembered.text.starts_with("done: remembered"), "{}", remembered.text);
    let recalled = setup.on_signal("what is my locker code?").await;
    assert!(
        recalled.contains("the locker code is 4711"),
        "recalled on Signal: {recalled}"
    );

    let remembered = setup.on_signal("remember the bike").await;
    assert!(remembered.starts_with("done: remembered"), "{remembered}");
    let in_group = setup.in_group("what is my locker code?").await;
    assert!(
        !in_group.contains("4711"),
        "not even her own Telegram facts in a group: {in_group}"
    );
    assert!(
        !in_group.contains("bike"),
        "nothing from her other channels in a group: {in_group}"
    );

    // Ada's own approval, asked on Telegram, answered from Signal.
    let prompt = setup.on_telegram(ADA_TELEGRAM, "please record the milk").await;
    let token = code_in(&prompt.text);
    let approved = setup.on_signal(&format!("approve {token}")).await;
    assert!(approved.starts_with("Approved"), "{approved}");
    // Bob's, asked in his chat, is not Ada's to answer from Signal.
    let bobs = setup.on_telegram(BOB_TELEGRAM, "please record the eggs").await;
    let bobs = code_in(&bobs.text);
    let refused = setup.on_signal(&format!("approve {bobs}")).await;
    assert!(refused.starts_with("No approval has the token"), "{refused}");
    let outcome = setup
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == ADA_TELEGRAM && s.text.starts_with("final: "))
        .await;
    assert!(outcome.is_some(), "the outcome settles on Telegram, where it was asked");
    assert_eq!(setup.record.calls(), 1, "only Ada's own ran");

    let saw = setup.model_saw();
    assert!(
        !saw.contains(&code) && !saw.contains("/link"),
        "no code reaches the model"
    );
    setup.daemon.stop().await;
}

#[tokio::test]
async fn link_in_a_group_is_refused_and_the_terminal_links_lists_and_unlinks() {
    let mut setup = start(model).await;
    let refused = setup.in_group("/link").await;
    assert!(refused.contains("not from a group"), "{refused}");
    assert!(!refused.contains("link code is"), "{refused}");

    let (status, nobody, _) = setup.cli(&["people"]).await;
    assert_eq!(status, Some(0));
    assert!(nobody.starts_with("Nobody is linked."), "{nobody}");
    let (status, _, wrong) = setup.cli(&["link", "ABCDEFGH"]).await;
    assert_eq!(
        (status, wrong.as_str()),
        (Some(1), "passepartout: no such link code (or it expired)\n")
    );

    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    let (status, linked, _) = setup.cli(&["link", &code]).await;
    assert_eq!(status, Some(0), "{linked}");
    assert!(linked.starts_with("Linked: this terminal and User42"), "{linked}");
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await[1]
        .text
        .clone();
    assert!(told.starts_with("Linked: this chat and socket:"), "{told}");

    let (_, listed, _) = setup.cli(&["people"]).await;
    assert!(listed.starts_with("person "), "{listed}");
    assert!(
        listed.contains("(telegram:42)") && listed.contains("socket:"),
        "{listed}"
    );
    let number = listed["person ".len()..].split(':').next().unwrap().to_owned();

    let (status, _, unknown) = setup.cli(&["people", "unlink", "999"]).await;
    assert_eq!(status, Some(1), "{unknown}");
    let (status, unlinked, _) = setup.cli(&["people", "unlink", &number]).await;
    assert_eq!(status, Some(0), "{unlinked}");
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 3, WAIT).await[2]
        .text
        .clone();
    assert!(
        told.starts_with("Unlinked: this chat is no longer one person"),
        "{told}"
    );
    let (_, nobody, _) = setup.cli(&["people"]).await;
    assert!(nobody.starts_with("Nobody is linked."), "{nobody}");
    setup.daemon.stop().await;
}

#[tokio::test]
async fn a_link_code_said_in_an_unbridged_group_dies_at_once_on_either_gateway() {
    let mut setup = start_in(model, GroupMode::MentionOrReply).await;
    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    // Not addressed to the bot, in a group that is not bridged.
    let said = setup
        .telegram
        .group_message(GROUP, ADA_TELEGRAM, &format!("/link {code}"));
    let id = setup.telegram.push_update(said);
    setup.telegram.wait_for_confirmed(id, WAIT).await;
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await[1]
        .text
        .clone();
    assert!(
        told.starts_with("Your link code was sent where others can read it"),
        "{told}"
    );
    let refused = setup.on_telegram(BOB_TELEGRAM, &format!("/link {code}")).await;
    assert_eq!(refused.text, "Not linked: no such link code (or it expired).");

    // The same said in a Signal group, by a member who may not even talk.
    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    let said = text_in_group("9f9f9f9f-0000-4000-8000-000000000009", &format!("/link {code}"));
    setup.signal.push_envelope(said);
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 4, WAIT).await[3]
        .text
        .clone();
    assert!(
        told.starts_with("Your link code was sent where others can read it"),
        "{told}"
    );
    let refused = setup.on_signal(&format!("/link {code}")).await;
    assert_eq!(refused, "Not linked: no such link code (or it expired).");

    assert!(setup.sent_to(GROUP).is_empty(), "nothing is said in the group");
    assert!(
        setup.signal.sent().iter().all(|sent| sent.recipients == [ADA_SIGNAL]),
        "nothing is said in the Signal group"
    );
    assert!(!setup.model_saw().contains(&code), "no code reaches the model");
    setup.daemon.stop().await;
}

#[tokio::test]
async fn what_a_person_keeps_is_read_in_their_private_chat_and_not_in_a_group() {
    let mut setup = start(model).await;
    let remembered = setup.on_telegram(ADA_TELEGRAM, "remember the locker").await;
    assert!(remembered.text.starts_with("done: remembered"), "{}", remembered.text);
    setup.on_telegram(ADA_TELEGRAM, "good morning").await;
    let private = setup.llm.requests().last().unwrap().to_string();
    assert!(
        private.contains("the locker code is 4711"),
        "in her own chat: {private}"
    );
    setup.in_group("good morning all").await;
    let group = setup.llm.requests().last().unwrap().to_string();
    assert!(group.contains("good morning all"), "{group}");
    assert!(!group.contains("4711"), "not in a group: {group}");
    setup.daemon.stop().await;
}

/// `text` from `uuid` in a Signal group, addressed to nobody.
fn text_in_group(uuid: &str, text: &str) -> Value {
    group_text_envelope(uuid, "Eve", 1_600_000_000_000, "R1JPVVA=", text, None)
}

#[tokio::test]
async fn a_conversation_handed_off_from_telegram_goes_on_on_signal_and_continue_brings_it_back() {
    let mut setup = linked(model).await;
    let bobs = setup.on_telegram(BOB_TELEGRAM, "/handoff signal").await;
    assert!(bobs.text.contains("send /link here"), "not linked: {}", bobs.text);

    let said = setup.on_telegram(ADA_TELEGRAM, "the fence gets painted green").await;
    assert!(said.text.contains("fence"), "{}", said.text);
    let nowhere = setup.on_telegram(ADA_TELEGRAM, "/handoff web").await;
    assert!(
        nowhere.text.starts_with("You have no linked chat on web"),
        "{}",
        nowhere.text
    );
    assert!(nowhere.text.contains("/handoff signal"), "{}", nowhere.text);

    let signal_before = setup.signal_texts().len();
    let handed = setup.on_telegram(ADA_TELEGRAM, "/handoff signal").await;
    assert!(
        handed.text.starts_with("Handing this conversation over to Signal"),
        "{}",
        handed.text
    );
    let carried = setup.signal_text(signal_before + 1).await;
    assert_eq!(carried, "Carried over from Telegram: the last turn. Go on here.",);
    setup.on_signal("what colour was it?").await;
    let asked = setup.llm.requests().last().unwrap()["messages"].to_string();
    assert!(
        asked.contains("Carried over from our conversation on Telegram")
            && asked.contains("the fence gets painted green"),
        "the Telegram turn is in the Signal conversation's context: {asked}"
    );

    let continued = setup.on_telegram(ADA_TELEGRAM, "/continue").await;
    assert!(
        continued.text.starts_with("Carried over from Signal: the last 2 turns"),
        "{}",
        continued.text
    );
    setup.on_telegram(ADA_TELEGRAM, "and the gate?").await;
    let asked = setup.llm.requests().last().unwrap()["messages"].to_string();
    assert!(
        asked.contains("what colour was it?"),
        "the Signal turn came back: {asked}"
    );
    assert!(
        !setup.model_saw().contains("/handoff"),
        "the commands never reach the model"
    );
    setup.daemon.stop().await;
}
