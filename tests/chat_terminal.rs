//! `passepartout chat` as a person uses it, on a pseudo-terminal: a
//! prompt, the reply streamed in rendered (bold and code, never a raw
//! marker), Up for the history kept across sessions, and Ctrl-C stopping a
//! streaming reply in one marked line, a second one leaving. The chat
//! starts its own daemon, whose log goes to the data directory.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::fake_llm::{FakeLlm, Script, Streamed};
use support::harness::WAIT;
use support::process::{binary, write_config};
use support::pty::Pty;

/// The chat's prompt.
const PROMPT: &str = "› ";

fn chat(config: &Path) -> Pty {
    let mut command = Command::new(binary());
    command
        .arg("--config")
        .arg(config)
        .arg("chat")
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("TERM", "xterm");
    Pty::spawn(command)
}

/// Waits for the chat to end by itself, and says how it ended.
async fn ended(pty: &mut Pty) -> std::process::ExitStatus {
    // The terminal closes when the last process holding it exits.
    pty.rest(WAIT).await;
    pty.child.wait().unwrap()
}

#[tokio::test]
async fn a_reply_streams_in_rendered_and_up_brings_back_the_last_message() {
    let llm = FakeLlm::start().await;
    let reply = "Here is **bold** text:\n```sh\nls -la\n```\nand `code` done.";
    llm.push(Script::Stream(Streamed::words(reply).spaced(Duration::from_millis(20))));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());

    let mut pty = chat(&config);
    pty.expect("chatting in", WAIT).await;
    pty.expect(PROMPT, WAIT).await;
    pty.type_line("show me");
    let bold = anstyle::Style::new().bold().render().to_string();
    let cyan = anstyle::Style::new()
        .fg_color(Some(anstyle::AnsiColor::Cyan.into()))
        .render()
        .to_string();
    pty.expect(&format!("{bold}bold"), WAIT).await;
    pty.expect(&format!("{cyan}ls -la"), WAIT).await;
    pty.expect("done.", WAIT).await;
    let streamed = pty.expect(PROMPT, WAIT).await;
    let shown = pty.shown.clone();
    assert!(!shown.contains("**"), "no raw bold marker: {shown:?}");
    assert!(!shown.contains("```"), "no raw fence: {shown:?}");
    assert!(
        !streamed.contains("INFO"),
        "the daemon's log is not on the terminal: {streamed:?}"
    );

    // Ctrl-D leaves; the next session finds the message in its history.
    pty.press("\x04");
    assert!(ended(&mut pty).await.success());
    let data = dir.path().join("data");
    let log = std::fs::read_to_string(data.join("chat.log")).expect("the daemon's log in the data directory");
    assert!(log.contains("INFO"), "{log}");

    let mut pty = chat(&config);
    pty.expect(PROMPT, WAIT).await;
    pty.press("\x1b[A");
    pty.expect("show me", WAIT).await;
    // Ctrl-C at the prompt: a hint, and a second one leaves.
    pty.press("\x03");
    pty.expect("Ctrl-C again", WAIT).await;
    pty.press("\x03");
    assert!(ended(&mut pty).await.success());
}

#[tokio::test]
async fn ctrl_c_stops_a_streaming_reply_in_one_line_and_a_second_leaves() {
    let llm = FakeLlm::start().await;
    let words: Vec<String> = (0..300).map(|n| format!("word{n}")).collect();
    llm.push(Script::Stream(
        Streamed::words(&words.join(" ")).spaced(Duration::from_millis(100)),
    ));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());

    let mut pty = chat(&config);
    pty.expect(PROMPT, WAIT).await;
    pty.type_line("count");
    pty.expect("word3", WAIT).await;
    // Typed while the reply streams: never shown in it, kept for the prompt.
    pty.press("next");
    pty.expect("word5", WAIT).await;
    pty.press("\x03");
    let stopped = pty.expect("[stopped]", WAIT).await;
    assert!(
        !stopped.contains("next"),
        "typing does not mix into the reply: {stopped:?}"
    );
    let line = stopped.rsplit(['\n', '\r']).next().unwrap();
    assert!(
        line.contains("word5"),
        "the partial reply and its mark on one line: {stopped:?}"
    );
    assert!(!stopped.contains("word299"), "{stopped:?}");
    pty.expect(PROMPT, WAIT).await;
    pty.expect("next", WAIT).await;
    pty.press("\x03");
    let status = ended(&mut pty).await;
    assert!(status.success(), "{status:?}");
}
