//! The Matrix gateway against a real homeserver: Synapse, started by the
//! tests on 127.0.0.1 (`tests/support/synapse.rs`), and a person's client
//! that encrypts end to end (matrix-nio), as Element does. The daemon logs
//! in with a password, accepts the allowed person's invitation to a direct
//! chat, decrypts what it is sent, and answers with its reply formatted and
//! encrypted, which the person's own client decrypts. In a room it answers
//! what mentions it; an approval prompt is decided by the approver's 👍,
//! once, or denied by a reply to it; a stranger's invitation is declined.

use std::sync::Arc;

use passepartout::config::Config;
use serde_json::json;

use crate::support::approvals;
use crate::support::fake_llm::{FakeLlm, Script, last_user_text};
use crate::support::harness::TestDaemon;
use crate::support::synapse::{Ask, Synapse, User};
use crate::support::tools::Record;

const ASSISTANT_PASSWORD: &str = "assistant-password-never-logged";

/// A daemon logged in on `synapse` as `assistant`, letting `allowed` talk.
async fn daemon(
    synapse: &Synapse,
    assistant: &User,
    allowed: &[&User],
    llm: &FakeLlm,
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
        },
        Vec::new(),
    )
    .await;
    (daemon, secrets)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_encrypted_direct_chat_is_answered_and_the_person_decrypts_the_formatted_answer() {
    let Some(synapse) =
        Synapse::start("matrix::an_encrypted_direct_chat_is_answered_and_the_person_decrypts_the_formatted_answer")
            .await
    else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| Script::Reply(format!("You said **{}**.", last_user_text(request))));
    let (_daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    let chat = synapse
        .client(&ada)
        .dm(Ask::new(&assistant.id, "hello over matrix"))
        .await;
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
    let secrets = tempfile::tempdir().unwrap();
    let password_file = secrets.path().join("matrix.password");
    std::fs::write(&password_file, ASSISTANT_PASSWORD).unwrap();
    let (url, assistant_id, ada_id) = (synapse.url().to_owned(), assistant.id.clone(), ada.id.clone());
    let daemon = TestDaemon::start_with(
        llm,
        move |config: &mut Config| {
            config.matrix.enabled = true;
            config.matrix.homeserver = url;
            config.matrix.user = assistant_id;
            config.matrix.password_file = Some(password_file);
            config.matrix.allowed_users = vec![ada_id];
            config.tools.require_approval = vec!["record".into()];
        },
        vec![Arc::new(record.clone())],
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
async fn a_strangers_invitation_is_declined() {
    let Some(synapse) = Synapse::start("matrix::a_strangers_invitation_is_declined").await else {
        return;
    };
    let assistant = synapse.register("assistant", ASSISTANT_PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let eve = synapse.register("eve", "eve-password", false).await;
    let llm = FakeLlm::start().await;
    let (_daemon, _secrets) = daemon(&synapse, &assistant, &[&ada], &llm).await;

    assert!(synapse.client(&eve).invite_declined(&assistant.id).await);
    assert!(llm.requests().is_empty(), "the model heard nothing of it");
}
