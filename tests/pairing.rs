//! Pairing end to end, on Telegram against the fake Bot API inside the real
//! daemon: a stranger who writes is sent one code (and nothing of theirs
//! reaches the model), the owner approves it from the CLI or with `/pair`,
//! the person then talks, a revocation holds at once, wrong codes are
//! refused alike, codes never reach the logs, and a code waiting and the
//! paired survive a restart. The owner is told who asks, by name, and the
//! person when they are let in, each once; a flood of strangers costs the
//! owner a few messages, and `pair clear` lets newcomers in again. The
//! owner's commands run as a person types them: `passepartout
//! pair list|approve|clear` and `passepartout access [revoke]`, through the
//! binary, with their output and exit codes.

use crate::support;

use std::path::PathBuf;

use support::fake_llm::FakeLlm;
use support::fake_telegram::{FakeTelegram, Sent};
use support::gateway_daemons::with_telegram;
use support::harness::{TestDaemon, WAIT, texts_of};
use support::logs::LogCapture;
use support::process::run_cli;

const TOKEN: &str = "123456:test-token-never-logged";
const OWNER: i64 = 42;
const STRANGER: i64 = 77;
/// Allowed to talk, not to approve.
const TALKER: i64 = 50;
/// How the fake Bot API names the stranger and the owner.
const STRANGER_SHOWN: &str = "User77 @user77 (telegram:77)";
const OWNER_SHOWN: &str = "User42 @user42 (telegram:42)";
const LET_IN: &str = "You are let in: you can talk to this assistant now.";

struct Setup {
    telegram: FakeTelegram,
    daemon: TestDaemon,
    llm: FakeLlm,
    /// A configuration the CLI reads to reach the daemon's socket.
    cli_config: PathBuf,
    _token_dir: tempfile::TempDir,
}

/// How a `passepartout` command ended: its exit code, and what it printed.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The CLI's exit codes: refused by the daemon, and no daemon to ask.
const REFUSED: Option<i32> = Some(1);
const UNREACHABLE: Option<i32> = Some(3);

impl Ran {
    /// What a command that succeeded printed.
    fn done(&self) -> &str {
        assert_eq!(self.code, Some(0), "{self:?}");
        assert!(self.stderr.is_empty(), "{self:?}");
        &self.stdout
    }

    /// What a command that ended with `code` said on stderr.
    fn failed(&self, code: Option<i32>) -> &str {
        assert_eq!(self.code, code, "{self:?}");
        assert!(self.stdout.is_empty(), "{self:?}");
        &self.stderr
    }
}

async fn start() -> Setup {
    start_with(|_| {}).await
}

/// The daemon, then `adjust`ed.
async fn start_with(adjust: impl FnOnce(&mut passepartout::config::Config)) -> Setup {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (daemon, token_dir) = with_telegram(&llm, &telegram, TOKEN, OWNER, |config| {
        config.telegram.allowed_users = vec![OWNER, TALKER];
        config.telegram.approvers = Some(vec![OWNER]);
        adjust(config);
    })
    .await;
    let cli_config = daemon.cli_config(&llm);
    Setup {
        telegram,
        daemon,
        llm,
        cli_config,
        _token_dir: token_dir,
    }
}

impl Setup {
    /// `text` from `user` in their private chat; waits until the daemon
    /// decided about it.
    async fn write(&self, user: i64, text: &str) {
        let id = self.telegram.push_update(self.telegram.text_message(user, user, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
    }

    /// The messages the bot sent to `chat`.
    fn sent_to(&self, chat: i64) -> Vec<Sent> {
        self.telegram.sent().into_iter().filter(|s| s.chat_id == chat).collect()
    }

    /// Waits for the `n`th message to `chat` and returns it.
    async fn nth_to(&self, chat: i64, n: usize) -> Sent {
        self.telegram.wait_for_sent_to(chat, n, WAIT).await[n - 1].clone()
    }

    /// Runs `passepartout ARGS` against the daemon, as the owner types it.
    async fn cli(&self, args: &[&str]) -> Ran {
        let output = run_cli(&self.cli_config, args).await;
        Ran {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// Waits until the model was asked `n` times; the user texts of the last request.
    async fn model_saw(&self, n: usize) -> Vec<String> {
        let requests = self.llm.wait_for_requests(n, WAIT).await;
        texts_of(requests.last().unwrap(), "user")
    }
}

/// The pairing code in a message the bot sent.
fn code_in(sent: &Sent) -> String {
    sent.text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() == 8 && w.chars().all(|c| passepartout_gateway::TOKEN_ALPHABET.contains(c)))
        .unwrap_or_else(|| panic!("no code in {:?}", sent.text))
        .to_owned()
}

#[tokio::test]
async fn a_stranger_gets_one_code_the_cli_approves_it_and_then_they_talk_until_revoked() {
    let logs = LogCapture::start();
    let setup = start().await;

    setup.write(STRANGER, "hello, let me in").await;
    let code = code_in(&setup.nth_to(STRANGER, 1).await);
    setup.write(STRANGER, "are you there?").await;
    assert_eq!(
        setup.sent_to(STRANGER).len(),
        1,
        "one code per window, not one per message"
    );
    assert!(
        setup.llm.requests().is_empty(),
        "nothing of a stranger's reaches the model"
    );

    let asks = setup.nth_to(OWNER, 1).await;
    assert!(
        asks.text.starts_with(&format!(
            "{STRANGER_SHOWN} asks to be let in. To let them in, send /pair approve {code} here"
        )),
        "the owner is told who asks, by name: {}",
        asks.text
    );
    assert!(setup.sent_to(TALKER).is_empty(), "only approvers are told of a request");

    let waiting = setup.cli(&["pair", "list"]).await;
    let waiting = waiting.done();
    assert!(waiting.starts_with(STRANGER_SHOWN), "{waiting}");
    assert!(!waiting.contains(&code), "the listing never shows a code");

    let forged = setup.cli(&["pair", "approve", "ABCD2345"]).await;
    let malformed = setup.cli(&["pair", "approve", "nonsense"]).await;
    let refusal = forged.failed(REFUSED);
    assert!(refusal.starts_with("passepartout: "), "{refusal}");
    assert_eq!(refusal, malformed.failed(REFUSED), "every wrong code reads the same");
    let approved = setup.cli(&["pair", "approve", &code.to_lowercase()]).await;
    assert_eq!(
        approved.done(),
        format!("{STRANGER_SHOWN} is let in; they were told so.\n")
    );
    let again = setup.cli(&["pair", "approve", &code]).await;
    assert_eq!(again.failed(REFUSED), refusal, "a used code is unknown");
    assert_eq!(
        setup.nth_to(STRANGER, 2).await.text,
        LET_IN,
        "the person is told they are let in"
    );

    setup.write(STRANGER, "thanks, what is 2+2?").await;
    let seen = setup.model_saw(1).await;
    assert_eq!(
        seen,
        vec!["thanks, what is 2+2?".to_owned()],
        "nothing from before pairing was kept"
    );
    setup.nth_to(STRANGER, 3).await;

    let listing = setup.cli(&["access"]).await;
    let listing = listing.done();
    assert!(listing.contains("telegram:42  allowed, approver  config"), "{listing}");
    assert!(
        listing.contains(&format!("{STRANGER_SHOWN}  allowed  paired by socket:")),
        "{listing}"
    );

    let configured = setup.cli(&["access", "revoke", "telegram:42"]).await;
    let configured = configured.failed(REFUSED);
    assert!(
        configured.starts_with("passepartout: "),
        "the configuration's lists are not revoked here: {configured}"
    );
    let revoked = setup.cli(&["access", "revoke", "telegram:77"]).await;
    assert!(!revoked.done().is_empty(), "{revoked:?}");
    setup.write(STRANGER, "still there?").await;
    let second = code_in(&setup.nth_to(STRANGER, 4).await);
    assert_ne!(second, code, "refused at once, and offered a new code");
    assert_eq!(
        setup.llm.requests().len(),
        1,
        "the revoked person no longer reaches the model"
    );

    assert_eq!(
        setup.sent_to(STRANGER).iter().filter(|s| s.text == LET_IN).count(),
        1,
        "told once"
    );
    code_in(&setup.nth_to(OWNER, 2).await);

    let logged = logs.text();
    assert!(
        !logged.contains(&code) && !logged.contains(&second),
        "a code reached the logs"
    );
}

#[tokio::test]
async fn a_code_sent_before_a_restart_is_paired_after_it_and_the_pairing_survives_the_next() {
    let mut setup = start().await;
    setup.write(STRANGER, "hello").await;
    let code = code_in(&setup.nth_to(STRANGER, 1).await);
    assert_eq!(
        code_in(&setup.nth_to(OWNER, 1).await),
        code,
        "the owner is told the code"
    );
    setup.daemon.restart(Vec::new()).await;
    setup.write(STRANGER, "still there?").await;

    setup.write(STRANGER, &format!("/pair {code} approver")).await;
    assert_eq!(
        setup.sent_to(STRANGER).len(),
        1,
        "a stranger's own /pair lets nobody in"
    );

    setup.write(OWNER, &format!("/pair approve {code} approver")).await;
    let answer = setup.nth_to(OWNER, 2).await;
    assert_eq!(
        answer.text,
        format!("{STRANGER_SHOWN} is let in, as an approver; they were told so."),
        "the code sent before the restart"
    );
    let told = setup.nth_to(STRANGER, 2).await;
    assert_eq!(
        told.text,
        "You are let in: you can talk to this assistant now, and approve its actions."
    );
    let codes = setup
        .sent_to(STRANGER)
        .iter()
        .filter(|s| s.text.contains(&code))
        .count();
    assert_eq!(codes, 1, "and no second code was sent after it");
    let asked = setup
        .sent_to(OWNER)
        .iter()
        .filter(|s| s.text.contains("asks to be let in"))
        .count();
    assert_eq!(asked, 1, "the owner is told once, across the restart");
    assert!(setup.llm.requests().is_empty(), "a /pair never reaches the model");

    setup.daemon.restart(Vec::new()).await;
    let listing = setup.cli(&["access"]).await;
    let listing = listing.done();
    assert!(
        listing.contains(&format!("{STRANGER_SHOWN}  allowed, approver  paired by {OWNER_SHOWN}")),
        "{listing}"
    );
    setup.write(STRANGER, "after the restart").await;
    assert_eq!(setup.model_saw(1).await, vec!["after the restart".to_owned()]);
    assert_eq!(
        setup
            .sent_to(STRANGER)
            .iter()
            .filter(|s| s.text.starts_with("You are let in"))
            .count(),
        1,
        "told once, across the restart"
    );
}

#[tokio::test]
async fn the_cli_makes_an_approver_and_says_so_when_no_daemon_answers() {
    let mut setup = start().await;
    assert_eq!(setup.cli(&["pair", "list"]).await.done(), "no pairing codes waiting\n");
    setup.write(STRANGER, "hello").await;
    let code = code_in(&setup.nth_to(STRANGER, 1).await);

    let approved = setup.cli(&["pair", "approve", &code, "--approver"]).await;
    assert_eq!(
        approved.done(),
        format!("{STRANGER_SHOWN} is let in, as an approver; they were told so.\n")
    );
    assert_eq!(
        setup.nth_to(STRANGER, 2).await.text,
        "You are let in: you can talk to this assistant now, and approve its actions."
    );
    assert_eq!(
        setup.cli(&["pair", "list"]).await.done(),
        "no pairing codes waiting\n",
        "the code is used up"
    );
    let listing = setup.cli(&["access"]).await;
    assert!(
        listing
            .done()
            .contains(&format!("{STRANGER_SHOWN}  allowed, approver  paired by socket:")),
        "{listing:?}"
    );

    setup.daemon.stop().await;
    for args in [
        &["pair", "list"][..],
        &["pair", "approve", &code],
        &["access"],
        &["access", "revoke", "telegram:77"],
    ] {
        let ran = setup.cli(args).await;
        let said = ran.failed(UNREACHABLE);
        assert!(
            said.starts_with("passepartout: the passepartout daemon is not running"),
            "{args:?}: {said}"
        );
    }
}

/// A Signal stranger's code named with `approver` by an approver on
/// Telegram is refused, and kept for one who may approve on Signal.
#[tokio::test]
async fn only_an_approver_on_the_strangers_gateway_makes_them_an_approver() {
    use support::fake_signal::text_envelope;
    use support::linked_pair::{ADA_TELEGRAM, code_in, start};

    const STRANGER: &str = "5a5a5a5a-0000-4000-8000-000000000005";
    let mut setup = start(|_| support::fake_llm::Script::Reply("ok".into())).await;
    setup
        .signal
        .push_envelope(text_envelope(STRANGER, 1_650_000_000_000, "hello?"));
    let to_stranger = |sent: &support::fake_signal::Sent| sent.recipients == [STRANGER];
    let offered = setup.signal.nth_sent(1, WAIT, to_stranger).await;
    let code = code_in(&offered.message.unwrap_or_default());
    let asked = setup.signal_text(1).await;
    assert!(asked.contains(&code), "Ada, who approves on Signal, is told: {asked}");

    let from_telegram = setup
        .on_telegram(ADA_TELEGRAM, &format!("/pair approve {code} approver"))
        .await;
    assert_eq!(
        from_telegram.text,
        "Not paired: only someone who may approve on signal may make an approver there; let them in to talk \
         only, without \"approver\"."
    );
    let from_signal = setup.on_signal(&format!("/pair approve {code} approver")).await;
    assert!(
        from_signal.ends_with("is let in, as an approver; they were told so."),
        "{from_signal}"
    );
    let told = setup.signal.nth_sent(2, WAIT, to_stranger).await;
    assert!(
        told.message
            .unwrap_or_default()
            .starts_with(LET_IN.trim_end_matches('.'))
    );
    setup.daemon.stop().await;
}

#[tokio::test]
async fn a_flood_of_strangers_costs_the_owner_a_few_messages_and_pair_clear_lets_newcomers_in() {
    let setup = start_with(|config| config.pairing.max_waiting = 8).await;
    for n in 0..12 {
        setup.write(1000 + n, "let me in").await;
    }
    // The owner's conversation delivers in order: once this is answered,
    // whatever the flood put before it was sent.
    setup.write(OWNER, "hello").await;
    let told = setup.nth_to(OWNER, 5).await;
    assert_eq!(told.text, "echo: hello");
    let told: Vec<String> = setup.sent_to(OWNER).into_iter().map(|s| s.text).collect();
    assert_eq!(told.len(), 5, "three requests, one folded, the answer: {told:#?}");
    assert!(told[..3].iter().all(|t| t.contains(" asks to be let in.")), "{told:#?}");
    assert!(
        told[3].starts_with("More people ask to be let in on telegram than you are told of"),
        "{}",
        told[3]
    );

    // Every place waits taken: a real newcomer is refused.
    const NEWCOMER: i64 = 2000;
    setup.write(NEWCOMER, "hi, it's me").await;
    let refused = setup.nth_to(NEWCOMER, 1).await;
    assert!(!refused.text.contains("pairing code"), "{}", refused.text);
    let waiting = setup.cli(&["pair", "list"]).await;
    assert_eq!(waiting.done().lines().count(), 8, "{waiting:?}");

    let nonsense = setup.cli(&["pair", "clear", "nonsense!"]).await;
    assert!(
        nonsense.failed(REFUSED).contains("neither a gateway, a person waiting"),
        "{nonsense:?}"
    );
    let one = setup.cli(&["pair", "clear", "telegram:1000"]).await;
    assert!(one.done().starts_with("cleared 1 pairing code;"), "{one:?}");
    let cleared = setup.cli(&["pair", "clear", "telegram"]).await;
    assert_eq!(
        cleared.done(),
        "cleared 7 pairing codes; whoever writes again is sent a new one\n"
    );
    assert_eq!(setup.cli(&["pair", "list"]).await.done(), "no pairing codes waiting\n");

    setup.write(NEWCOMER, "me again").await;
    let code = code_in(&setup.nth_to(NEWCOMER, 2).await);
    let approved = setup.cli(&["pair", "approve", &code]).await;
    assert!(approved.done().contains("(telegram:2000) is let in"), "{approved:?}");
}
