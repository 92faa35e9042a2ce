//! The Signal gateway inside the real daemon: a fake signal-cli daemon and a
//! fake model, the real gateway, intake, pipeline and approvals between them;
//! on a dedicated number, and on a person's own account (Note to Self).

use crate::support;

use std::sync::Arc;

use passepartout::config::SignalConfig;
use serde_json::json;
use support::approvals::model;
use support::fake_llm::{FakeLlm, last_user_text};
use support::fake_signal::{
    ACCOUNT, ACCOUNT_UUID, FakeSignal, Sent, group_mention_envelope, note_to_self_envelope, quote_envelope,
    reaction_envelope, sync_sent_envelope, text_envelope,
};
use support::harness::{TestDaemon, WAIT};
use support::tools::Record;

const OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
const STRANGER: &str = "0e0e0e0e-0000-4000-8000-00000000000e";
const FRIEND: &str = "0f0f0f0f-0000-4000-8000-00000000000f";
const FRIEND_NUMBER: &str = "+15550000043";

struct Setup {
    signal: FakeSignal,
    llm: FakeLlm,
    record: Record,
    daemon: TestDaemon,
}

async fn start() -> Setup {
    start_allowing(OWNER).await
}

/// The daemon with `allowed` (a UUID or a number) as the one allowed sender
/// and approver.
async fn start_allowing(allowed: &str) -> Setup {
    let allowed = allowed.to_owned();
    start_on(move |section| {
        section.account_uuid = Some(ACCOUNT_UUID.into());
        section.allowed_senders = vec![allowed];
    })
    .await
}

/// The daemon against a fake signal-cli, with `record` gated by approval
/// and the `[signal]` section as `signal` makes it (from the account and
/// the fake's endpoint).
async fn start_on(signal_section: impl FnOnce(&mut SignalConfig) + Send + 'static) -> Setup {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let record = Record::default();
    let endpoint = signal.tcp_endpoint();
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.tools.require_approval = vec!["record".into()];
            assert!(config.pairing.enabled, "pairing is on, as by default");
            let section = &mut config.signal;
            section.enabled = true;
            section.account = ACCOUNT.into();
            section.endpoint = endpoint;
            signal_section(section);
        },
        vec![Arc::new(record.clone())],
    )
    .await;
    Setup {
        signal,
        llm,
        record,
        daemon,
    }
}

/// Waits until a message satisfying `wanted` was sent, and returns it.
async fn sent_where(signal: &FakeSignal, wanted: impl Fn(&Sent) -> bool) -> Sent {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = 0;
    loop {
        let sent = tokio::time::timeout_at(deadline, signal.wait_for_sent(seen + 1))
            .await
            .unwrap_or_else(|_| panic!("no such message within {WAIT:?}; sent: {:#?}", signal.sent()));
        if let Some(found) = sent.iter().find(|s| wanted(s)) {
            return found.clone();
        }
        seen = sent.len();
    }
}

#[tokio::test]
async fn a_message_from_an_allowed_sender_is_answered_quoting_it() {
    let setup = start().await;
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_001, "hello there"));
    let reply = sent_where(&setup.signal, |s| s.recipients == [OWNER]).await;
    assert_eq!(reply.message.as_deref(), Some("echo: hello there"));
    assert_eq!(reply.quote_timestamp, Some(1_700_000_000_001));
    assert_eq!(reply.quote_author.as_deref(), Some(OWNER));
}

#[tokio::test]
async fn a_stranger_reaches_nothing() {
    let setup = start().await;
    setup
        .signal
        .push_envelope(text_envelope(STRANGER, 1_700_000_000_001, "hi"));
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_002, "ping"));
    sent_where(&setup.signal, |s| s.recipients == [OWNER]).await;
    let asked: Vec<String> = setup.llm.requests().iter().map(last_user_text).collect();
    assert_eq!(asked, ["ping"], "the stranger's words never reached the model");
}

#[tokio::test]
async fn a_thumbs_up_on_the_prompt_approves_and_the_action_runs_once() {
    let setup = start().await;
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_001, "please record the milk"));
    let prompt = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("Approval needed"))
    })
    .await;
    assert_eq!(setup.record.calls(), 0, "nothing runs before approval");
    setup.signal.push_envelope(reaction_envelope(
        OWNER,
        1_700_000_000_002,
        "👍",
        prompt.timestamp,
        ACCOUNT_UUID,
        false,
    ));
    let done = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("final: "))
    })
    .await;
    assert!(done.message.unwrap().contains("and it ran"));
    assert_eq!(setup.record.calls(), 1);
    let status = setup.daemon.daemon.as_ref().unwrap().status();
    assert_eq!(status["approvals"]["pending"], 0, "{status}");
    let edit = edit_of(&setup.signal, &prompt).await;
    assert_eq!(edit.recipients, [OWNER]);
    assert!(
        edit.message
            .as_deref()
            .is_some_and(|m| m.contains(&format!("Approved by Ada (signal:{OWNER})"))),
        "the decider is named by their profile name, then id: {edit:?}"
    );
    assert!(
        edit.message.as_deref().is_some_and(|m| m.contains("Approved by")),
        "{edit:?}"
    );
    assert!(!edit.text_styles.is_empty(), "the outcome is styled: {edit:?}");
}

/// The prompt as a Signal user sees it: styled, no literal backtick or
/// `**`, telling them to reply or react, and never a command to type in a
/// shell or a button to tap.
#[tokio::test]
async fn a_prompt_on_signal_says_to_reply_or_react_and_shows_no_markup() {
    let setup = start().await;
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_001, "please record the milk"));
    let prompt = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("Approval needed"))
    })
    .await;
    let text = prompt.message.as_deref().unwrap();
    assert!(!text.contains('`') && !text.contains("**"), "{text}");
    assert!(
        text.contains("Reply approve or deny to this message, or react 👍 or 👎."),
        "{text}"
    );
    assert!(text.contains("Reply always to also let record "), "{text}");
    for never in ["passepartout ", "Tap ", "Type "] {
        assert!(!text.contains(never), "{never:?} in {text}");
    }
    assert!(
        prompt.text_styles.iter().any(|style| style.ends_with(":BOLD")),
        "{prompt:?}"
    );
    assert!(
        prompt.text_styles.iter().any(|style| style.ends_with(":MONOSPACE")),
        "{prompt:?}"
    );
}

/// The edit the gateway made of `prompt` once it was decided.
async fn edit_of(signal: &FakeSignal, prompt: &Sent) -> Sent {
    sent_where(signal, |s| {
        s.params.get("editTimestamp").and_then(serde_json::Value::as_u64) == Some(prompt.timestamp)
    })
    .await
}

#[tokio::test]
async fn a_sender_allowed_by_number_talks_and_approves() {
    const NUMBER: &str = "+15550000042";
    let setup = start_allowing(NUMBER).await;
    let with_number = |mut envelope: serde_json::Value| {
        envelope["sourceNumber"] = NUMBER.into();
        envelope
    };
    // Without the number, the UUID alone is a stranger's.
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_001, "who am I?"));
    setup.signal.push_envelope(with_number(text_envelope(
        OWNER,
        1_700_000_000_002,
        "please record the milk",
    )));
    let prompt = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("Approval needed"))
    })
    .await;
    setup.signal.push_envelope(with_number(reaction_envelope(
        OWNER,
        1_700_000_000_003,
        "👍",
        prompt.timestamp,
        ACCOUNT_UUID,
        false,
    )));
    sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("final: "))
    })
    .await;
    assert_eq!(setup.record.calls(), 1, "approved by the number's owner");
    let asked: Vec<String> = setup.llm.requests().iter().map(last_user_text).collect();
    assert!(!asked.iter().any(|text| text == "who am I?"), "{asked:?}");
}

#[tokio::test]
async fn a_quote_reply_saying_deny_denies_and_nothing_runs() {
    let setup = start().await;
    setup
        .signal
        .push_envelope(text_envelope(OWNER, 1_700_000_000_001, "please record the eggs"));
    let prompt = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("Approval needed"))
    })
    .await;
    setup.signal.push_envelope(quote_envelope(
        OWNER,
        1_700_000_000_002,
        "deny",
        prompt.timestamp,
        ACCOUNT_UUID,
    ));
    let done = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("final: "))
    })
    .await;
    assert!(done.message.unwrap().contains("denied"), "the model is told");
    assert_eq!(setup.record.calls(), 0);
    let edit = edit_of(&setup.signal, &prompt).await;
    assert!(
        edit.message
            .as_deref()
            .is_some_and(|m| m.contains(&format!("Denied by Ada (signal:{OWNER})"))),
        "{edit:?}"
    );
}

#[tokio::test]
async fn doctor_finds_the_daemon_and_the_account() {
    let signal = FakeSignal::start().await;
    let mut config = passepartout::config::Config::default();
    config.signal.enabled = true;
    config.signal.account = ACCOUNT.into();
    config.signal.endpoint = signal.unix_endpoint();
    config.signal.multi_account = true;
    let found = passepartout::gateways::signal::Signal::new(&config)
        .probe()
        .await
        .expect("found");
    assert!(found.contains(&format!("has {ACCOUNT}")), "{found}");
    config.signal.account = "+15559999999".into();
    let missing = passepartout::gateways::signal::Signal::new(&config)
        .probe()
        .await
        .unwrap_err();
    assert!(missing.contains("signal-cli -a +15559999999 register"), "{missing}");
    drop(signal);
    let gone = passepartout::gateways::signal::Signal::new(&config)
        .probe()
        .await
        .unwrap_err();
    assert!(gone.contains("no signal-cli daemon at"), "{gone}");
}

/// The daemon on the person's own account: Note to Self on, `allowed` the
/// only sender listed (none when empty); pairing and the refusal as by
/// default (on, and said), which the person's contacts must never see.
async fn start_personal(allowed: &[&str]) -> Setup {
    let allowed: Vec<String> = allowed.iter().map(|sender| (*sender).to_owned()).collect();
    start_on(move |section| {
        section.note_to_self = true;
        section.allowed_senders = allowed;
        assert!(!section.refusal.is_empty(), "a refusal would be said, as by default");
    })
    .await
}

fn asked(setup: &Setup) -> Vec<String> {
    setup.llm.requests().iter().map(last_user_text).collect()
}

#[tokio::test]
async fn a_note_to_self_is_answered_in_note_to_self() {
    let setup = start_personal(&[]).await;
    setup
        .signal
        .push_envelope(note_to_self_envelope(1_700_000_000_001, "hello there"));
    let reply = sent_where(&setup.signal, |s| s.message.is_some()).await;
    assert_eq!(reply.recipients, [ACCOUNT], "to the account's own number: Note to Self");
    assert_eq!(reply.message.as_deref(), Some("echo: hello there"));
    assert_eq!(reply.quote_timestamp, Some(1_700_000_000_001));
    assert_eq!(reply.quote_author.as_deref(), Some(ACCOUNT_UUID));
    assert!(setup.signal.calls("sendTyping").is_empty(), "nobody to show typing to");
}

#[tokio::test]
async fn the_assistants_reply_handed_back_as_a_sync_message_is_not_input() {
    let setup = start_personal(&[]).await;
    setup
        .signal
        .push_envelope(note_to_self_envelope(1_700_000_000_001, "hello there"));
    let reply = sent_where(&setup.signal, |s| s.message.is_some()).await;
    // The reply comes back from the account, as signal-cli may hand it over.
    let echo = sync_sent_envelope(
        Some(ACCOUNT),
        Some(ACCOUNT_UUID),
        reply.timestamp,
        2,
        json!({ "message": reply.message, "quote": { "id": 1_700_000_000_001u64, "author": ACCOUNT,
            "authorNumber": ACCOUNT, "authorUuid": ACCOUNT_UUID, "text": "hello there", "attachments": [] } }),
    );
    setup.signal.push_envelope(echo);
    setup
        .signal
        .push_envelope(note_to_self_envelope(1_700_000_000_002, "ping"));
    sent_where(&setup.signal, |s| s.message.as_deref() == Some("echo: ping")).await;
    assert_eq!(asked(&setup), ["hello there", "ping"], "the echo started no turn");
    assert_eq!(setup.signal.sent().len(), 2, "{:#?}", setup.signal.sent());
}

#[tokio::test]
async fn on_a_personal_account_the_persons_chats_and_contacts_reach_nothing_and_hear_nothing() {
    let setup = start_personal(&[FRIEND]).await;
    let signal = &setup.signal;
    // What the person wrote to someone else on their phone.
    signal.push_envelope(sync_sent_envelope(
        Some(FRIEND_NUMBER),
        Some(STRANGER),
        1_700_000_000_001,
        1,
        json!({ "message": "dinner at 8?" }),
    ));
    // … and to a group.
    signal.push_envelope(sync_sent_envelope(
        None,
        None,
        1_700_000_000_002,
        1,
        json!({ "message": "hi all", "groupInfo": { "groupId": "R1JPVVA=", "type": "DELIVER" } }),
    ));
    // Someone writing to the person, and a group mentioning them.
    signal.push_envelope(text_envelope(STRANGER, 1_700_000_000_003, "are you there?"));
    signal.push_envelope(group_mention_envelope(
        STRANGER,
        1_700_000_000_004,
        "R1JPVVA=",
        "look at this",
    ));
    // A listed sender is still answered, and the person in Note to Self.
    signal.push_envelope(text_envelope(FRIEND, 1_700_000_000_005, "hello assistant"));
    signal.push_envelope(note_to_self_envelope(1_700_000_000_006, "ping"));
    sent_where(signal, |s| s.recipients == [ACCOUNT]).await;
    sent_where(signal, |s| s.recipients == [FRIEND]).await;
    assert_eq!(
        asked(&setup),
        ["hello assistant", "ping"],
        "nothing else reached the model"
    );
    let sent = signal.sent();
    assert_eq!(sent.len(), 2, "no refusal, no pairing code: {sent:#?}");
    assert!(signal.calls("sendReaction").is_empty());
}

/// Writes `text` to Note to Self and waits for the approval prompt it leads to.
async fn prompt_for_a_note(setup: &Setup, text: &str) -> Sent {
    setup
        .signal
        .push_envelope(note_to_self_envelope(1_700_000_000_001, text));
    sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("Approval needed"))
    })
    .await
}

#[tokio::test]
async fn approvals_are_asked_and_given_in_note_to_self_by_a_thumbs_up() {
    let setup = start_personal(&[]).await;
    let prompt = prompt_for_a_note(&setup, "please record the milk").await;
    assert_eq!(prompt.recipients, [ACCOUNT], "the prompt goes to Note to Self");
    assert_eq!(setup.record.calls(), 0, "nothing runs before approval");
    // The person reacts on their phone: a sync message to themselves.
    setup.signal.push_envelope(sync_sent_envelope(
        Some(ACCOUNT),
        Some(ACCOUNT_UUID),
        1_700_000_000_002,
        1,
        json!({ "reaction": { "emoji": "👍", "targetAuthor": ACCOUNT, "targetAuthorNumber": ACCOUNT,
            "targetAuthorUuid": ACCOUNT_UUID, "targetSentTimestamp": prompt.timestamp, "isRemove": false } }),
    ));
    let done = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("final: "))
    })
    .await;
    assert!(done.message.unwrap().contains("and it ran"));
    assert_eq!(done.recipients, [ACCOUNT]);
    assert_eq!(setup.record.calls(), 1);
    let edit = edit_of(&setup.signal, &prompt).await;
    assert_eq!(edit.recipients, [ACCOUNT], "the prompt in Note to Self is edited");
}

#[tokio::test]
async fn approvals_in_note_to_self_can_be_answered_by_a_quote_reply() {
    let setup = start_personal(&[]).await;
    let prompt = prompt_for_a_note(&setup, "please record the eggs").await;
    setup.signal.push_envelope(sync_sent_envelope(
        Some(ACCOUNT),
        Some(ACCOUNT_UUID),
        1_700_000_000_002,
        1,
        json!({ "message": "deny", "quote": { "id": prompt.timestamp, "author": ACCOUNT, "authorNumber": ACCOUNT,
            "authorUuid": ACCOUNT_UUID, "text": "Approval needed", "attachments": [] } }),
    ));
    let done = sent_where(&setup.signal, |s| {
        s.message.as_deref().is_some_and(|m| m.starts_with("final: "))
    })
    .await;
    assert!(done.message.unwrap().contains("denied"), "the model is told");
    assert_eq!(setup.record.calls(), 0);
}
