//! What the approver reads is what runs, end to end: a shell command
//! disguised with a carriage return, an escape sequence, a right-to-left
//! override and a zero-width space is shown with each of them as an escape
//! in the terminal's prompt (`passepartout send`, the real binary), in the
//! socket's prompt frame, in `passepartout approvals` and its audit trail,
//! and on the dashboard's Approvals page, while the approval keeps the
//! command as it was asked.

use crate::support;

use serde_json::Value;
use support::approvals::{DISGUISED, DISGUISED_SHOWN, find, stderr, stdout, undisguised};
use support::process::run_cli;

#[tokio::test]
async fn a_disguised_command_is_shown_escaped_on_every_surface_and_runs_as_asked() {
    let signed = crate::web_forms::sign_in().await;
    let setup = &signed.setup;
    let config = setup.daemon.cli_config(&setup.llm);

    // The terminal's prompt, as `send` prints it while the approval waits.
    let sent = run_cli(&config, &["send", "--timeout-s", "2", "please run the disguised one"]).await;
    assert_eq!(sent.status.code(), Some(4), "the approval waits: {sent:?}");
    let said = stderr(&sent);
    assert!(said.contains(DISGUISED_SHOWN) && undisguised(&said), "{said:?}");

    // The socket's prompt, to a chat client.
    let mut chat = setup.chat("alice").await;
    let original = chat.send("please run the disguised one").await;
    let prompt = chat.prompt(&original).await;
    for shown in [&prompt.markdown, &prompt.text] {
        assert!(shown.contains(DISGUISED_SHOWN) && undisguised(shown), "{shown:?}");
    }
    assert_eq!(prompt.action, format!("shell: {DISGUISED_SHOWN}"));

    // The terminal's listing.
    let listed = run_cli(&config, &["approvals"]).await;
    assert!(listed.status.success(), "{listed:?}");
    let listed = stdout(&listed);
    assert!(
        listed.contains(&format!("{}  pending  shell: {DISGUISED_SHOWN}\n", prompt.token)),
        "{listed:?}"
    );
    assert!(undisguised(&listed), "{listed:?}");
    assert_eq!(listed.matches(DISGUISED_SHOWN).count(), 2, "both approvals: {listed:?}");

    // The dashboard's Approvals page.
    let page = signed.get("/approvals").await;
    assert!(
        page.contains(&format!("<pre><code>{DISGUISED_SHOWN}</code></pre>")),
        "{page}"
    );
    assert!(undisguised(&page), "{page:?}");

    // What would run is the command as asked, not as shown.
    let json = run_cli(&config, &["approvals", "--json"]).await;
    let listing: Value = serde_json::from_str(&stdout(&json)).expect("JSON");
    assert_eq!(find(&listing, &prompt.token)["arguments"]["command"], DISGUISED);

    // Denied, the audit trail shows it escaped, on the terminal and the page.
    let denied = run_cli(&config, &["approvals", "deny", "--all"]).await;
    assert!(denied.status.success(), "{denied:?}");
    assert!(undisguised(&stdout(&denied)), "{denied:?}");
    let trail = run_cli(&config, &["approvals", "--all"]).await;
    let trail = stdout(&trail);
    for event in ["requested", "denied"] {
        let line = format!("{event} {} `shell: {DISGUISED_SHOWN}`", prompt.token);
        assert!(trail.contains(&line), "{line:?} missing from {trail:?}");
    }
    assert!(undisguised(&trail), "{trail:?}");
    let page = signed.get("/approvals").await;
    assert!(
        page.contains(&format!(
            "denied {} <code>shell: {DISGUISED_SHOWN}</code>",
            prompt.token
        )),
        "{page}"
    );
    assert!(undisguised(&page), "{page:?}");
}
