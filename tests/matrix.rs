//! The Matrix gateway against a real homeserver: Synapse, started by the
//! tests on 127.0.0.1 (`tests/support/synapse.rs`), and a person's client
//! that encrypts end to end (matrix-nio), as Element does. The daemon logs
//! in with a password, accepts the allowed person's invitation to a direct
//! chat, decrypts what it is sent, and answers with its reply formatted and
//! encrypted, which the person's own client decrypts. In a room it answers
//! what mentions it; an approval prompt is decided by the approver's 👍 or
//! 👎, a reply to it or `approve TOKEN`, once, and edited to say who
//! decided; a stranger's invitation to a direct chat is accepted and they
//! are offered a pairing code (declined with pairing off). A long reply is shown
//! while it is written, by edits, and ends as its parts; a file goes to the
//! inbox and back out, encrypted both ways. `setup` logs in once and
//! stores the device's token, with which the daemon then answers, and the
//! dashboard's Channels page does the same (a wrong password writing
//! nothing). Killed
//! in the middle of a burst, the daemon answers every message once. A room
//! bridged with a Telegram group carries each side's words to the other,
//! under the speaker's name. The owner verifies the assistant's device by
//! emoji as Element does, the daemon's log showing the seven emojis the
//! owner's client shows.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use passepartout::config::Config;
use passepartout::safety::tools::Tool;
use serde_json::json;

use crate::support::approvals;
use crate::support::dashboard;
use crate::support::fake_llm::{FakeLlm, Script, Streamed, last_message, last_user_text};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::gateway_daemons::{telegram_on, token_file};
use crate::support::harness::{TestDaemon, WAIT};
use crate::support::matrix_person::verify_by_emoji;
use crate::support::process::{Running, binary, run_cli, write_config};
use crate::support::synapse::{Action, Ask, Chat, Reply, Synapse, User};
use crate::support::tools::Record;

const ASSISTANT_PASSWORD: &str = "assistant-password-never-logged";
/// How long a test waits for what follows a message a client sends once
/// the assistant joined its room: the client waits up to a minute for the
/// join, which a loaded machine may need.
const JOINED_AND_ANSWERED: Duration = Duration::from_secs(90);

/// A daemon logged in on `synapse` as `assistant`, letting `allowed` talk.
async fn daemon(
    synapse: &Synapse,
    assistant: &User,
    allowed: &[&User],
    llm: &FakeLlm,
) -> (TestDaemon, tempfile::TempDir) {
    daemon_with(synapse, assistant, allowed, llm, Vec::new(), |_| {}).await
}

/// [`daemon`] with `tools` and its configuration changed by `adjust`.
async fn daemon_with(
    synapse: &Synapse,
    assistant: &User,
    allowed: &[&User],
    llm: &FakeLlm,
    tools: Vec<Arc<dyn Tool>>,
    adjust: impl FnOnce(&mut Config),
) -> (TestDaemon, tempfile::TempDir) {
    let secrets = tempfile::tempdir().unwrap();
    let password_file = secrets.path().join("matrix.password");
    std::fs::write(&password_file, format!("{ASSISTANT_PASSWORD}\n")).unwrap();
    let url = synapse.url().to_owned();
    let assistant = assistant.id.clone();
    let allowed: Vec<String> = allowed.iter().map(|user| user.id.clone()).collect();
    let daemon = TestDaemon::start_with(
        llm,
        move |config: &mut Config| {
            config.matrix.enabled = true;
            config.matrix.homeserver = url;
            config.matrix.user = assistant;
            config.matrix.password_file = Some(password_file);
            config.matrix.allowed_users = allowed;
            adjust(config);
        },
        tools,
    )
    .await;
    (daemon, secrets)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_encrypted_direct_chat_is_answered_with_typing_and_a_receipt_and_the_person_decrypts_the_formatted_answer() {
    let Some(synapse) =
        Synapse::start(
            "matrix::an_encrypted_direct_chat_is_answered_with_typing_and_a_receipt_and_the_person_decrypts_the_formatted_answer",
        )
            .await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    // A model slow enough that the person sees the assistant typing.
    llm.set_responder(|request| {
        Script::Delay(
            Duration::from_millis(1500),
            Box::new(Script::Reply(format!("You said **{}**.", last_user_text(request)))),
        )
    });
    let (_daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    let chat = synapse
        .client(&ada)
        .dm(Ask::new(&assistant.id, "hello over matrix"))
        .await;
    // Both come before the answer: the receipt once the message is
    // journaled, "typing" while the turn runs.
    assert!(chat.actions.contains(&Action::Typing {}), "{:?}", chat.actions);
    assert!(
        chat.actions.contains(&Action::Read {
            event_id: chat.sent.clone()
        }),
        "{:?}",
        chat.actions
    );
    let reply = &chat.replies[0];
    assert_eq!(reply.sender, assistant.id);
    assert!(reply.decrypted, "the answer came encrypted: {reply:?}");
    assert_eq!(reply.body, "You said hello over matrix.");
    assert_eq!(
        reply.formatted_body.as_deref(),
        Some("You said <strong>hello over matrix</strong>.")
    );
    assert_eq!(reply.in_reply_to.as_deref(), Some(chat.sent.as_str()), "{reply:?}");
    assert!(!synapse.log().contains(ASSISTANT_PASSWORD));
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_room_it_answers_what_mentions_it() {
    let Some(synapse) = Synapse::start("matrix::in_a_room_it_answers_what_mentions_it").await else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| Script::Reply(format!("Heard: {}", last_user_text(request))));
    let (_daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    let chat = synapse
        .client(&ada)
        .room("family", Ask::new(&assistant.id, "what is for dinner?"))
        .await;
    let reply = &chat.replies[0];
    assert_eq!(reply.sender, assistant.id);
    assert!(
        reply.body.starts_with("Heard: ") && reply.body.ends_with("what is for dinner?"),
        "{reply:?}"
    );
    assert_eq!(reply.in_reply_to.as_deref(), Some(chat.sent.as_str()), "{reply:?}");
}

/// A daemon on `synapse` whose `record` tool waits for approval, with
/// `ada` allowed to talk and approve; its tool's counter.
async fn approving_daemon(
    synapse: &Synapse,
    assistant: &User,
    ada: &User,
    llm: &FakeLlm,
) -> (TestDaemon, Record, tempfile::TempDir) {
    llm.set_responder(approvals::model);
    let record = Record::default();
    let (daemon, secrets) = daemon_with(
        synapse,
        assistant,
        &[ada],
        llm,
        vec![Arc::new(record.clone())],
        |config| {
            config.tools.require_approval = vec!["record".into()];
        },
    )
    .await;
    (daemon, record, secrets)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_is_decided_by_the_approvers_reaction_and_runs_once() {
    let Some(synapse) = Synapse::start("matrix::an_approval_is_decided_by_the_approvers_reaction_and_runs_once").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let (_daemon, record, _secrets) = approving_daemon(&synapse, &assistant, &ada, &llm).await;

    let steps = json!([
        { "say": "please record the milk" },
        { "await": "Approval needed" },
        { "react": "👍" },
        { "await": "final: " },
    ]);
    let chat = synapse.client(&ada).script(&assistant.id, &steps, true).await;
    assert_eq!(record.calls(), 1, "approved once, run once: {:#?}", chat.replies);
    let last = chat.replies.last().unwrap();
    assert!(last.body.starts_with("final: [passepartout]"), "{last:?}");
    assert!(chat.replies.iter().all(|reply| reply.decrypted), "{:#?}", chat.replies);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_is_denied_by_a_reply_to_its_prompt_and_nothing_runs() {
    let Some(synapse) = Synapse::start("matrix::an_approval_is_denied_by_a_reply_to_its_prompt_and_nothing_runs").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let (_daemon, record, _secrets) = approving_daemon(&synapse, &assistant, &ada, &llm).await;

    let steps = json!([
        { "say": "please record the milk" },
        { "await": "Approval needed" },
        { "reply": "deny" },
        { "await": "final: " },
    ]);
    let chat = synapse.client(&ada).script(&assistant.id, &steps, true).await;
    assert_eq!(record.calls(), 0, "denied, so it never ran: {:#?}", chat.replies);
    let last = chat.replies.last().unwrap();
    assert!(last.body.starts_with("final: [passepartout]"), "{last:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_strangers_invitation_is_declined_when_pairing_is_off() {
    let Some(synapse) = Synapse::start("matrix::a_strangers_invitation_is_declined_when_pairing_is_off").await else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let eve = synapse.register("eve", "eve-password", false).await;
    let llm = FakeLlm::start().await;
    let (_daemon, _secrets) = daemon_with(&synapse, &assistant, &[&ada], &llm, Vec::new(), |config| {
        config.pairing.enabled = false;
    })
    .await;

    assert!(synapse.client(&eve).invite_declined(&assistant.id).await);
    assert!(llm.requests().is_empty(), "the model heard nothing of it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stranger_in_a_direct_chat_is_offered_a_code_and_talks_once_it_is_approved_in_threads_too() {
    let Some(synapse) = Synapse::start(
        "matrix::a_stranger_in_a_direct_chat_is_offered_a_code_and_talks_once_it_is_approved_in_threads_too",
    )
    .await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let eve = synapse.register("eve", "eve-password", false).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| Script::Reply(format!("echo: {}", last_user_text(request))));
    let (daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    let eves = synapse.client(&eve);
    let steps = json!([{ "say": "hello, let me in" }, { "await": "pairing code" }]);
    let asked = eves.script(&assistant.id, &steps, true).await;
    assert!(llm.requests().is_empty(), "nothing of a stranger's reaches the model");
    let offer = &asked.replies[0].body;
    let code = offer
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|word| word.len() == 8 && word.chars().all(|c| passepartout_gateway::TOKEN_ALPHABET.contains(c)))
        .unwrap_or_else(|| panic!("no code in {offer:?}"));
    let approved = run_cli(&daemon.cli_config(&llm), &["pair", "approve", code]).await;
    assert!(approved.status.success(), "{approved:?}");

    let steps = json!([
        { "say": "what is 2+2?" },
        { "await": "echo: what is 2+2?" },
        { "thread": "and 3+3?" },
        { "await": "echo: and 3+3?" },
    ]);
    let talked = eves.script_in(&asked.room, &assistant.id, &steps).await;
    let heard: Vec<String> = llm.requests().iter().map(last_user_text).collect();
    assert_eq!(
        heard,
        ["what is 2+2?", "and 3+3?"],
        "nothing from before the pairing was kept"
    );
    // The question asked in a thread is answered in that thread.
    let awaited = awaited(&talked);
    let in_thread = reply(&talked, &awaited[1]);
    assert_eq!(in_thread.thread.as_ref(), Some(&awaited[0]), "{in_thread:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_is_denied_by_a_thumbs_down_approved_by_its_token_and_each_prompt_says_who_decided() {
    let Some(synapse) = Synapse::start(
        "matrix::an_approval_is_denied_by_a_thumbs_down_approved_by_its_token_and_each_prompt_says_who_decided",
    )
    .await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let (_daemon, record, _secrets) = approving_daemon(&synapse, &assistant, &ada, &llm).await;

    let steps = json!([
        { "say": "please record the milk" },
        { "await": "Approval needed" },
        { "react": "👎" },
        { "await": "Denied by" },
        { "await": "final: " },
        { "say": "please record the eggs" },
        { "await": "Approval needed" },
        { "say": "approve {token}" },
        { "await": "Approved by" },
        { "await": "final: " },
    ]);
    let chat = synapse.client(&ada).script(&assistant.id, &steps, true).await;
    assert_eq!(record.calls(), 1, "the eggs only, once: {:#?}", chat.replies);
    let awaited = awaited(&chat);
    let [denied_prompt, denied, _, approved_prompt, approved, _] = awaited.as_slice() else {
        panic!("six awaits met: {awaited:#?}");
    };
    for (prompt, decision) in [(denied_prompt, denied), (approved_prompt, approved)] {
        let edit = reply(&chat, decision);
        assert_eq!(
            edit.replaces.as_ref(),
            Some(prompt),
            "the prompt itself is edited: {edit:?}"
        );
        let shown = edit.new_body.as_deref().unwrap_or_default();
        assert!(
            shown.contains(&ada.id) || shown.contains("ada"),
            "it names who decided: {shown}"
        );
    }
    let typed = chat
        .actions
        .iter()
        .find_map(|action| match action {
            Action::Sent { body, .. } if body.starts_with("approve ") => Some(body.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        reply(&chat, approved_prompt).body.contains(&typed["approve ".len()..]),
        "{typed}"
    );
}

/// The assistant's messages each `await` of `chat` met, in order.
fn awaited(chat: &Chat) -> Vec<String> {
    chat.actions
        .iter()
        .filter_map(|action| match action {
            Action::Awaited { event_id, .. } => Some(event_id.clone()),
            _ => None,
        })
        .collect()
}

/// The assistant's message `event_id` in `chat`.
fn reply<'a>(chat: &'a Chat, event_id: &str) -> &'a Reply {
    chat.replies
        .iter()
        .find(|reply| reply.event_id == event_id)
        .unwrap_or_else(|| panic!("no message {event_id}: {:#?}", chat.replies))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_reply_is_shown_by_edits_while_written_and_ends_as_its_parts() {
    let Some(synapse) =
        Synapse::start("matrix::a_long_reply_is_shown_by_edits_while_written_and_ends_as_its_parts").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    // 900 words, about 7 KB: two messages, written over about four seconds.
    let words: Vec<String> = (0..900).map(|n| format!("word{n}")).collect();
    let long = format!("**Long** answer: {}.", words.join(" "));
    let answer = long.clone();
    llm.set_responder(move |request| {
        if last_user_text(request) == "tell me everything" {
            Script::Stream(Streamed::words(&answer).spaced(Duration::from_millis(4)))
        } else {
            Script::Reply("that was all".into())
        }
    });
    let (_daemon, _secrets) = daemon_with(&synapse, &assistant, &[&ada], &llm, Vec::new(), |config| {
        config.matrix.stream = Some(true);
    })
    .await;

    // The second turn's answer comes after everything of the first, which
    // the outbox delivers in order.
    let steps = json!([
        { "say": "tell me everything" },
        { "await": "word899." },
        { "say": "is that all?" },
        { "await": "that was all" },
    ]);
    let chat = synapse.client(&ada).script(&assistant.id, &steps, true).await;
    let question = &chat.sent;
    let first_turn: Vec<&Reply> = chat
        .replies
        .iter()
        .take_while(|reply| reply.body != "that was all")
        .collect();
    let messages: Vec<&&Reply> = first_turn.iter().filter(|reply| reply.replaces.is_none()).collect();
    assert_eq!(messages.len(), 2, "two parts, each one message: {first_turn:#?}");
    assert_eq!(
        messages[0].in_reply_to.as_ref(),
        Some(question),
        "the first quotes the question"
    );
    // What each message shows now: its last edit's text.
    let shown: Vec<String> = messages
        .iter()
        .map(|message| {
            let last_edit = first_turn
                .iter()
                .rev()
                .find(|reply| reply.replaces.as_ref() == Some(&message.event_id));
            last_edit
                .and_then(|edit| edit.new_body.clone())
                .unwrap_or_else(|| message.body.clone())
        })
        .collect();
    assert_eq!(shown.join(" "), long.replace("**", ""), "the parts are the whole reply");
    let edits_of_first = first_turn
        .iter()
        .filter(|reply| reply.replaces.as_ref() == Some(&messages[0].event_id))
        .count();
    assert!(
        edits_of_first >= 2,
        "shown while written, then made the reply: {edits_of_first} edits"
    );
    assert!(first_turn.iter().all(|reply| reply.decrypted), "{first_turn:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_goes_to_the_inbox_and_back_out_encrypted_both_ways() {
    let Some(synapse) = Synapse::start("matrix::a_file_goes_to_the_inbox_and_back_out_encrypted_both_ways").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        if last_message(request)["role"] == "tool" {
            return Script::Reply("Sent back.".into());
        }
        Script::ToolCall {
            name: "send_file".into(),
            arguments: json!({ "path": "inbox/shopping.txt", "caption": "your **list**" }).to_string(),
        }
    });
    let (daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    let steps = json!([
        { "send_file": "shopping.txt", "data": "milk, eggs", "caption": "what do I need?" },
        { "await_file": "shopping.txt" },
        { "await": "Sent back" },
    ]);
    let chat = synapse.client(&ada).script(&assistant.id, &steps, true).await;
    let saved = std::fs::read_to_string(daemon.config.workspace().join("inbox/shopping.txt")).unwrap();
    assert_eq!(saved, "milk, eggs", "decrypted into the inbox");
    let told = last_user_text(&llm.requests()[0]);
    assert!(told.contains("what do I need?"), "with its caption: {told}");
    let file = chat
        .actions
        .iter()
        .find_map(|action| match action {
            Action::File {
                text,
                encrypted,
                caption,
                ..
            } => Some((text, *encrypted, caption)),
            _ => None,
        })
        .unwrap();
    assert_eq!(file, (&"milk, eggs".to_owned(), true, &Some("your list".to_owned())));
}

#[tokio::test(flavor = "multi_thread")]
async fn setup_logs_in_once_and_the_daemon_answers_with_the_token_it_stored() {
    let Some(synapse) =
        Synapse::start("matrix::setup_logs_in_once_and_the_daemon_answers_with_the_token_it_stored").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("conf");
    std::fs::create_dir_all(&dir).unwrap();
    let config = write_config(&dir, &llm.base_url());
    let args = [
        "setup",
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--only",
        "matrix",
        "--matrix-homeserver",
        synapse.url(),
        "--matrix-user",
        &assistant.id,
        "--matrix-password-stdin",
        "--matrix-owner",
        &ada.id,
    ];
    let output = run_setup(home.path(), &args, &format!("{ASSISTANT_PASSWORD}\n")).await;
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(shown.contains("Logged in as"), "{shown}");
    let written = std::fs::read_to_string(&config).unwrap();
    let token_file = dir.join("matrix.token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    for text in [&shown, &written, &token] {
        assert!(
            !text.contains(ASSISTANT_PASSWORD),
            "the password is kept nowhere: {text}"
        );
    }
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let loaded = passepartout::gateways::load(Some(&config), Some(Default::default())).expect("the file loads");
    assert_eq!(loaded.matrix.access_token_file.as_deref(), Some(token_file.as_path()));
    assert!(loaded.matrix.device_id.is_some(), "{written}");
    assert_eq!(loaded.matrix.approver_ids(), std::slice::from_ref(&ada.id));

    // The daemon logs in with nothing but the token, as the device setup made.
    llm.set_responder(|request| Script::Reply(format!("Heard: {}", last_user_text(request))));
    let section = loaded.matrix.clone();
    let daemon = TestDaemon::start_with(
        &llm,
        move |config: &mut Config| {
            config.matrix = section;
            // A backup every beat, each copying the Matrix folder beside it.
            config.store.backup_every_s = 1;
            config.loops.heartbeat_s = 1;
        },
        Vec::new(),
    )
    .await;
    let chat = synapse
        .client(&ada)
        .dm(Ask::new(&assistant.id, "hello after setup"))
        .await;
    assert_eq!(chat.replies[0].body, "Heard: hello after setup");
    assert!(chat.replies[0].decrypted, "{:?}", chat.replies[0]);

    // The device's session and keys are copied beside the store's backups.
    let live = daemon.config.data_dir().join("matrix");
    let copy = tokio::time::timeout(WAIT, async {
        loop {
            let found = std::fs::read_dir(daemon.config.backup_dir())
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .find(|path| {
                    path.to_string_lossy().ends_with(".ppbk.matrix")
                        && path.join("store/matrix-sdk-crypto.sqlite3").exists()
                });
            if let Some(found) = found {
                break found;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a backup copies the Matrix folder");
    for file in ["session.json", "store.key"] {
        assert_eq!(
            std::fs::read(copy.join(file)).unwrap(),
            std::fs::read(live.join(file)).unwrap(),
            "{file}"
        );
    }
    let crypto = std::fs::read(copy.join("store/matrix-sdk-crypto.sqlite3")).unwrap();
    assert!(crypto.starts_with(b"SQLite format 3\0"), "a whole database");
    assert!(
        !copy.join("store/matrix-sdk-event-cache.sqlite3").exists(),
        "a cache, left out"
    );
    assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o700);
}

/// Runs `passepartout ARGS` with `home` as its home and `stdin` as its
/// input, to its end.
async fn run_setup(home: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(binary())
        .args(args)
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("xdg-config"))
        .env("XDG_DATA_HOME", home.join("xdg-data"))
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start setup");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("setup finishes")
        .expect("setup runs")
}

/// A configuration file in `dir` for the binary: the model at `llm`, and
/// Matrix as `assistant` on `synapse`, letting `allowed` talk.
fn config_file(dir: &std::path::Path, synapse: &Synapse, assistant: &User, allowed: &User, llm: &FakeLlm) -> PathBuf {
    let config = write_config(dir, &llm.base_url());
    let password_file = dir.join("matrix.password");
    std::fs::write(&password_file, ASSISTANT_PASSWORD).unwrap();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += &*format!(
        "[matrix]\nenabled = true\nhomeserver = {url:?}\nuser = {user:?}\npassword_file = {file:?}\n\
         allowed_users = [{allowed:?}]\n",
        url = synapse.url(),
        user = assistant.id,
        file = password_file.display().to_string(),
        allowed = allowed.id,
    );
    std::fs::write(&config, text).unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_in_the_middle_of_a_burst_loses_and_repeats_nothing() {
    const BURST: usize = 10;
    /// The message whose turn the kill interrupts: the model never answers
    /// it the first time, so the moment is exact.
    const CUT: usize = 5;
    let Some(synapse) = Synapse::start("matrix::a_kill_in_the_middle_of_a_burst_loses_and_repeats_nothing").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let hung = std::sync::atomic::AtomicBool::new(false);
    llm.set_responder(move |request| {
        if last_user_text(request) == format!("m{CUT}") && !hung.swap(true, std::sync::atomic::Ordering::SeqCst) {
            Script::Hang
        } else {
            Script::Echo
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &synapse, &assistant, &ada, &llm);
    let daemon = Running::start(&config).await;

    let mut steps: Vec<serde_json::Value> = (0..BURST).map(|n| json!({ "say": format!("m{n}") })).collect();
    steps.extend((0..BURST).map(|n| json!({ "await": format!("echo: m{n}"), "wait": 90 })));
    let client = synapse.client(&ada);
    let to = assistant.id.clone();
    let talk = tokio::spawn(async move { client.script(&to, &json!(steps), true).await });
    // The client first waits for the assistant to join, for up to a minute.
    let requests = llm.wait_for_requests(CUT + 1, JOINED_AND_ANSWERED).await;
    assert_eq!(
        last_user_text(&requests[CUT]),
        format!("m{CUT}"),
        "one turn per message, in order"
    );
    daemon.kill().await;

    let daemon = Running::start(&config).await;
    let chat = talk.await.unwrap_or_else(|failed| {
        let logged = daemon.logs.lock().unwrap().join("\n");
        panic!("{failed}\nthe restarted daemon logged:\n{logged}")
    });
    for n in 0..BURST {
        let answers = chat
            .replies
            .iter()
            .filter(|reply| reply.body == format!("echo: m{n}"))
            .count();
        assert_eq!(answers, 1, "m{n} answered once: {:#?}", chat.replies);
    }
    assert_eq!(chat.replies.len(), BURST, "nothing else: {:#?}", chat.replies);
    daemon.terminate().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bridged_room_and_a_telegram_group_carry_each_others_words_both_ways() {
    const TOKEN: &str = "123456:matrix-bridge-token";
    const GROUP: i64 = -100;
    const BOB: i64 = 42;
    let Some(synapse) =
        Synapse::start("matrix::a_bridged_room_and_a_telegram_group_carry_each_others_words_both_ways").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| Script::Reply(format!("echo: {}", last_user_text(request))));
    let telegram = FakeTelegram::start(TOKEN).await;
    let client = synapse.client(&ada);
    // The room exists before the daemon, which the bridge names it in.
    let room = client.create_room("family", &assistant.id, true).await;
    let (token_dir, token_file) = token_file(TOKEN);
    let (api_url, bridged_room) = (telegram.base_url(), room.clone());
    let (_daemon, _secrets) = daemon_with(&synapse, &assistant, &[&ada], &llm, Vec::new(), |config| {
        telegram_on(config, api_url, token_file, BOB);
        config.telegram.allowed_chats = vec![GROUP];
        config.matrix.allowed_rooms = vec![bridged_room.clone()];
        config.bridges = vec![passepartout::config::BridgeConfig {
            name: "family".into(),
            chats: vec![format!("telegram:{GROUP}"), format!("matrix:{bridged_room}")],
        }];
    })
    .await;

    let steps = json!([
        { "say": "dinner at seven?" },
        { "await": "(Telegram): yes, I bring bread" },
    ]);
    let to = assistant.id.clone();
    let talk = tokio::spawn(async move { client.script_in(&room, &to, &steps).await });
    // The client first waits for the assistant to join, for up to a minute.
    let copy = telegram.wait_for_sent_to(GROUP, 1, JOINED_AND_ANSWERED).await[0].clone();
    assert_eq!(copy.text, "ada (Matrix): dinner at seven?");
    telegram.push_update(telegram.group_message(GROUP, BOB, "yes, I bring bread"));
    let chat = talk.await.unwrap();
    let relayed = chat
        .replies
        .iter()
        .find(|reply| reply.body.contains("yes, I bring bread"))
        .unwrap();
    assert_eq!(relayed.body, "User42 (Telegram): yes, I bring bread", "{relayed:?}");
    assert!(relayed.decrypted, "encrypted as the room is: {relayed:?}");
    assert_eq!(telegram.sent().len(), 1, "nothing relayed back: {:#?}", telegram.sent());
    assert!(llm.requests().is_empty(), "nobody addressed the assistant");
    drop(token_dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_owner_verifies_the_assistants_device_by_the_emojis_its_log_shows() {
    let Some(synapse) =
        Synapse::start("matrix::the_owner_verifies_the_assistants_device_by_the_emojis_its_log_shows").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let daemon = Running::start(&config_file(dir.path(), &synapse, &assistant, &ada, &llm)).await;

    // As Element does: a request, answered ready, then the emojis compared.
    let verified = daemon.wait_for_log(&["the assistant's device is verified"]);
    let verifying = verify_by_emoji(synapse.url(), &ada, &assistant.id, async {
        verified.await;
    });
    let emojis = tokio::time::timeout(Duration::from_secs(180), verifying)
        .await
        .unwrap_or_else(|_| {
            let logged = daemon.logs.lock().unwrap().join("\n");
            panic!("not verified; the daemon logged:\n{logged}")
        });
    assert_eq!(emojis.len(), 7, "{emojis:?}");
    let shown = daemon
        .wait_for_log(&["verifying the assistant's device", &ada.id])
        .await;
    let mut from = 0;
    for emoji in &emojis {
        let at = shown[from..]
            .find(emoji.as_str())
            .unwrap_or_else(|| panic!("{emoji} is not where the person's client has it: {shown}"));
        from += at + emoji.len();
    }
    daemon.terminate().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_logs_the_account_in_once_and_a_wrong_password_writes_nothing() {
    let Some(synapse) =
        Synapse::start("matrix::the_dashboard_logs_the_account_in_once_and_a_wrong_password_writes_nothing").await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let dashboard = dashboard::start("").await;
    dashboard
        .llm
        .set_responder(|request| Script::Reply(format!("Heard: {}", last_user_text(request))));
    let before = dashboard.file();
    let token_file = dashboard.dir.path().join("matrix.token");
    let form = |user: &'static str, password: &'static str| {
        let user = if user.is_empty() {
            assistant.id.clone()
        } else {
            user.to_owned()
        };
        vec![
            ("homeserver", synapse.url().to_owned()),
            ("user", user),
            ("password", password.to_owned()),
            ("owner", ada.id.clone()),
        ]
    };
    let post = async |fields: Vec<(&'static str, String)>| {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        dashboard.post("/channels/matrix", &fields).await
    };

    for (fields, said) in [
        (form("", "a-wrong-password-0042"), "did not log"),
        (form("assistant", ASSISTANT_PASSWORD), "@name:server"),
    ] {
        let (status, answer) = post(fields).await;
        assert_eq!(status, reqwest::StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert!(answer.contains(said), "{answer}");
        assert!(!answer.contains("a-wrong-password-0042"), "{answer}");
        assert_eq!(dashboard.file(), before, "the file is left as it was");
        assert!(!token_file.exists());
    }

    let (status, answer) = post(form("", ASSISTANT_PASSWORD)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{answer}");
    assert!(answer.contains("Logged in as"), "{answer}");
    let written = String::from_utf8(dashboard.file()).unwrap();
    let token = std::fs::read_to_string(&token_file).unwrap();
    for text in [&answer, &written, &token] {
        assert!(
            !text.contains(ASSISTANT_PASSWORD),
            "the password is kept nowhere: {text}"
        );
    }
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let loaded =
        passepartout::gateways::load(Some(&dashboard.config), Some(Default::default())).expect("the file loads");
    assert!(loaded.matrix.enabled && loaded.matrix.device_id.is_some(), "{written}");
    assert_eq!(loaded.matrix.access_token_file.as_deref(), Some(token_file.as_path()));
    assert_eq!(loaded.matrix.allowed_users, std::slice::from_ref(&ada.id));
    let page = dashboard.get("/channels").await;
    assert!(page.contains("Matrix is on in the configuration"), "{page}");

    // Started again, the daemon logs in with the token alone and answers.
    let dashboard::Dashboard {
        daemon,
        config,
        dir: _dir,
        llm: _llm,
        ..
    } = dashboard;
    daemon.terminate().await;
    let _daemon = Running::start_with(&config, &[("PP_WEB_ADMIN_KEY", dashboard::CANARY)]).await;
    let chat = synapse
        .client(&ada)
        .dm(Ask::new(&assistant.id, "hello from the dashboard's login"))
        .await;
    assert_eq!(chat.replies[0].body, "Heard: hello from the dashboard's login");
}
