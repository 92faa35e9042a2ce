//! Chaos test: the real binary with all three gateways at once — the local
//! socket, Telegram (a fake Bot API) and Signal (a fake signal-cli daemon) —
//! under load from several chats on each, killed with SIGKILL at random
//! moments, and fed a poison update on Telegram and a poison line on Signal
//! mid-conversation. The store must open every time, and at the end:
//!
//! - every message the daemon accepted was answered by exactly one turn
//!   (each model answer carries a fresh number, so two turns for one message
//!   would show as two different texts);
//! - a reply whose delivery a kill cut short may be sent again (delivery is
//!   at least once: no platform can say whether a send it never confirmed went
//!   out), at most once per kill and conversation;
//! - on Signal, a message signal-cli handed over in the moment before the kill
//!   and never journaled is gone — signal-cli keeps nothing once it has handed
//!   a message to its client, which is the platform's window, not ours. The
//!   test proves each unanswered Signal message is absent from the store,
//!   i.e. was never accepted, and counts them.
//!
//! It prints its figures. `CHAOS_KILLS=N` runs a longer soak
//! (default 4 kills), `CHAOS_SEED` repeats a run.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use passepartout::config::StoreConfig;
use passepartout::store::Store;
use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::fake_signal::{ACCOUNT, ACCOUNT_UUID, FakeSignal, text_envelope};
use support::fake_telegram::FakeTelegram;
use support::harness::WAIT;
use support::process::{Running, socket_path, write_config};
use support::socket_load::{Progress, SocketLoad, join_all};

const TOKEN: &str = "123456:chaos-token";
const SOCKET_CHATS: usize = 3;
const TELEGRAM_CHATS: usize = 3;
const SIGNAL_CHATS: usize = 3;
/// Messages per chat for each kill, so that a longer soak keeps the load on
/// to its end; at least [`MIN_PER_CHAT`].
const PER_CHAT_PER_KILL: usize = 6;
const MIN_PER_CHAT: usize = 25;
/// How long a Signal chat waits for an answer before taking its message as
/// lost in the hand-off and going on, as a person would. Nothing is
/// concluded from it: the store says at the end whether it was accepted.
const SIGNAL_PATIENCE: Duration = Duration::from_secs(5);
/// Nesting past any JSON parser's recursion limit.
const POISON_DEPTH: usize = 300;

fn telegram_user(chat: usize) -> i64 {
    1_000 + chat as i64
}

fn signal_user(chat: usize) -> String {
    format!("5a5a5a5a-0000-4000-8000-{:012}", chat + 1)
}

/// What one chat on Telegram or Signal saw: its message texts in order.
fn texts(gateway: &str, chat: usize, per_chat: usize) -> Vec<String> {
    (0..per_chat).map(|n| format!("{gateway}{chat}-m{n}")).collect()
}

/// The message a reply text answers, and the model call's number in it.
fn answered(reply: &str) -> Option<(&str, &str)> {
    reply.strip_prefix("echo: ")?.rsplit_once(" #")
}

/// One Telegram chat's conversation, through every daemon lifetime: a
/// message, then its answer. Telegram keeps an update until the bot confirms
/// it, so every message must be answered, however many kills come between.
async fn telegram_chat(telegram: FakeTelegram, chat: usize, per_chat: usize, progress: Arc<Progress>) {
    let user = telegram_user(chat);
    for text in texts("tg", chat, per_chat) {
        telegram.push_update(telegram.text_message(user, user, &text));
        let prefix = format!("echo: {text} #");
        let found = telegram
            .sent_matching(WAIT * 3, |sent| sent.chat_id == user && sent.text.starts_with(&prefix))
            .await;
        assert!(
            found.is_some(),
            "Telegram: {text} was not answered within {:?}",
            WAIT * 3
        );
        progress.bump();
    }
}

/// One Signal chat's conversation: a message, then its answer, or after
/// [`SIGNAL_PATIENCE`] the next message.
async fn signal_chat(signal: Arc<FakeSignal>, chat: usize, per_chat: usize, progress: Arc<Progress>) {
    let user = signal_user(chat);
    for (n, text) in texts("sg", chat, per_chat).into_iter().enumerate() {
        let timestamp = 1_700_000_000_000 + (chat * 1_000_000 + n) as u64;
        signal.push_envelope(text_envelope(&user, timestamp, &text));
        let prefix = format!("echo: {text} #");
        let found = signal
            .sent_matching(SIGNAL_PATIENCE, |sent| {
                sent.recipients == [user.clone()] && sent.message.as_deref().is_some_and(|m| m.starts_with(&prefix))
            })
            .await;
        if found.is_some() {
            progress.bump();
        }
    }
}

/// The config of the daemon: the socket, Telegram and Signal, all on.
fn config(dir: &std::path::Path, llm: &FakeLlm, telegram: &FakeTelegram, signal: &FakeSignal) -> std::path::PathBuf {
    let path = write_config(dir, &llm.base_url());
    let token_file = dir.join("telegram-token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let telegram_users: Vec<String> = (0..TELEGRAM_CHATS).map(|c| telegram_user(c).to_string()).collect();
    let signal_users: Vec<String> = (0..SIGNAL_CHATS).map(|c| format!("{:?}", signal_user(c))).collect();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "[telegram]\nenabled = true\ntoken_file = {token:?}\napi_url = {api:?}\nallowed_users = [{users}]\npoll_timeout_s = 1\n\
         [signal]\nenabled = true\naccount = {ACCOUNT:?}\naccount_uuid = {ACCOUNT_UUID:?}\nendpoint = {endpoint:?}\nallowed_senders = [{senders}]\n",
        token = token_file.display().to_string(),
        api = telegram.base_url(),
        users = telegram_users.join(", "),
        endpoint = signal.tcp_endpoint(),
        senders = signal_users.join(", "),
    ));
    std::fs::write(&path, text).unwrap();
    path
}

/// Every text a gateway sent, grouped by the message it answers: message →
/// (reply text → how many times it was sent).
fn by_message<'a>(replies: impl Iterator<Item = &'a str>) -> HashMap<String, BTreeMap<String, usize>> {
    let mut grouped: HashMap<String, BTreeMap<String, usize>> = HashMap::new();
    for reply in replies {
        let (message, _) = answered(reply).unwrap_or_else(|| panic!("a reply that answers nothing: {reply:?}"));
        *grouped
            .entry(message.to_owned())
            .or_default()
            .entry(reply.to_owned())
            .or_default() += 1;
    }
    grouped
}

/// Checks one gateway's replies: one turn per answered message, and the
/// copies sent again after a cut delivery. Returns (answered, sent again).
fn one_turn_each(gateway: &str, grouped: &HashMap<String, BTreeMap<String, usize>>) -> (usize, usize) {
    let mut again = 0;
    for (message, texts) in grouped {
        assert_eq!(
            texts.len(),
            1,
            "{gateway}: {message} was answered by more than one turn: {texts:?}"
        );
        again += texts.values().next().unwrap() - 1;
    }
    (grouped.len(), again)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_every_gateway_under_load_loses_nothing_accepted_and_answers_once() {
    let kills: usize = std::env::var("CHAOS_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(rand::random);
    let per_chat = (kills * PER_CHAT_PER_KILL).max(MIN_PER_CHAT);
    eprintln!(
        "chaos test: {kills} kills, {per_chat} messages per chat, seed {seed} (CHAOS_SEED={seed} repeats this run)"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let started = Instant::now();

    let llm = FakeLlm::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    {
        let calls = calls.clone();
        llm.set_responder(move |request: &Value| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            Script::Reply(format!("echo: {} #{n}", last_user_text(request)))
        });
    }
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = Arc::new(FakeSignal::start().await);
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &llm, &telegram, &signal);
    let socket = socket_path(dir.path());

    // Telegram and Signal chats talk through every lifetime; socket clients
    // connect anew to each.
    let progress = Arc::new(Progress::default());
    let socket_load = SocketLoad::new("so", SOCKET_CHATS, per_chat);
    let mut conversations: Vec<_> = (0..TELEGRAM_CHATS)
        .map(|chat| tokio::spawn(telegram_chat(telegram.clone(), chat, per_chat, progress.clone())))
        .collect();
    conversations.extend(
        (0..SIGNAL_CHATS).map(|chat| tokio::spawn(signal_chat(signal.clone(), chat, per_chat, progress.clone()))),
    );
    let conversations = join_all(conversations);
    tokio::pin!(conversations);
    let mut talked_out = false;

    let mut poison_update = None;
    let mut restarts = Vec::new();
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    for round in 0..kills {
        let starting = Instant::now();
        let daemon = Running::start(&config).await;
        restarts.push(starting.elapsed());
        if round == 1 {
            // Mid-conversation: an update no parser reads, and lines that are
            // no JSON-RPC message, while every chat is talking.
            let user = telegram_user(0);
            poison_update = Some(telegram.push_update(telegram.nested_message(user, user, POISON_DEPTH)));
            signal.wait_for_subscriber().await;
            signal.send_raw("this is not JSON {{{");
            signal.send_raw(format!("{}{}", "[".repeat(POISON_DEPTH), "]".repeat(POISON_DEPTH)));
        }
        let kill_after = progress.get() + socket_load.acks.get() + rng.random_range(5..40);
        let clients = join_all(socket_load.spawn_clients(&socket));
        tokio::pin!(clients);
        let reached = async {
            loop {
                let now = progress.get() + socket_load.acks.get();
                if now >= kill_after {
                    return;
                }
                tokio::select! {
                    () = progress.reached(now + 1) => {}
                    () = socket_load.acks.reached(socket_load.acks.get() + 1) => {}
                }
            }
        };
        tokio::pin!(reached);
        // Kill once enough happened, or once everyone is done.
        let mut clients_done = false;
        while !(talked_out && clients_done) {
            tokio::select! {
                () = &mut reached => break,
                () = &mut conversations, if !talked_out => talked_out = true,
                () = &mut clients, if !clients_done => clients_done = true,
            }
        }
        // The count moves when a reply reaches a fake, which is the moment a
        // delivery is least finished; a few milliseconds more or less spread
        // the kills over every other moment too.
        tokio::time::sleep(Duration::from_micros(rng.random_range(0..20_000))).await;
        logs.lock().unwrap().extend(daemon.logs.lock().unwrap().iter().cloned());
        daemon.kill().await;
        if !clients_done {
            let _ = tokio::time::timeout(WAIT, &mut clients).await;
        }
        eprintln!(
            "round {round}: killed with {} answered on Telegram and Signal, {} accepted on the socket",
            progress.get(),
            socket_load.acks.get()
        );
    }

    // The last lifetime: no kill; every conversation must finish.
    let starting = Instant::now();
    let daemon = Running::start(&config).await;
    restarts.push(starting.elapsed());
    let finished = async {
        join_all(socket_load.spawn_clients(&socket)).await;
        if !talked_out {
            (&mut conversations).await;
        }
    };
    if tokio::time::timeout(WAIT * 6, finished).await.is_err() {
        panic!("the conversations did not finish after the last restart");
    }
    logs.lock().unwrap().extend(daemon.logs.lock().unwrap().iter().cloned());
    let last_logs = daemon.logs.clone();
    let status = daemon.terminate().await;
    assert!(
        status.success(),
        "clean exit after SIGTERM: {status:?}; it logged:\n{}",
        last_logs.lock().unwrap().join("\n")
    );

    // Socket: every message accepted and answered by one turn; a reply id
    // seen twice is one reply delivered twice, which the client drops.
    let replies = socket_load.assert_answered_once();
    let (socket_answered, _) = one_turn_each("socket", &by_message(replies.values().map(String::as_str)));

    // Telegram: every message answered by one turn; the poison update was
    // skipped, logged by its id, and answered nothing.
    let sent = telegram.sent();
    let grouped = by_message(sent.iter().map(|s| s.text.as_str()));
    let (telegram_answered, telegram_again) = one_turn_each("Telegram", &grouped);
    assert_eq!(
        telegram_answered,
        TELEGRAM_CHATS * per_chat,
        "every Telegram message answered"
    );
    let poison_update = poison_update.expect("the poison was sent");
    assert!(
        telegram.confirmed_offset() > poison_update,
        "the offset moved past the poison update"
    );
    let logs = logs.lock().unwrap();
    assert!(
        logs.iter()
            .any(|line| line.contains("skipped a Telegram update that cannot be read")
                && line.contains(&poison_update.to_string())),
        "the poison update was logged by id"
    );
    assert!(
        logs.iter()
            .any(|line| line.contains("skipping a line from signal-cli that is not JSON")),
        "the poison line was logged"
    );

    // Signal: each answered message by one turn; each unanswered one never
    // reached the store.
    let sent = signal.sent();
    let grouped = by_message(sent.iter().filter_map(|s| s.message.as_deref()));
    let (signal_answered, signal_again) = one_turn_each("Signal", &grouped);
    let store = Store::open(&dir.path().join("data").join("store"), &StoreConfig::default()).expect("the store opens");
    let mut handed_off = 0;
    for chat in 0..SIGNAL_CHATS {
        let conversation = ConversationKey::new(
            GatewayId::new("signal").unwrap(),
            ChatId::new(signal_user(chat)).unwrap(),
        );
        let history = serde_json::to_string(&store.recent_turns::<Value>(&conversation, usize::MAX).unwrap()).unwrap();
        for text in texts("sg", chat, per_chat) {
            if grouped.contains_key(&text) {
                // The lookup below sees what the store holds.
                assert!(
                    history.contains(&format!("\"{text}\"")),
                    "Signal: {text} is in the history"
                );
                continue;
            }
            assert!(
                !history.contains(&format!("\"{text}\"")),
                "Signal: {text} was accepted (it is in the history) and never answered"
            );
            handed_off += 1;
        }
    }
    let at_most = kills * (TELEGRAM_CHATS + SIGNAL_CHATS);
    assert!(
        telegram_again + signal_again <= at_most,
        "more replies sent again than kills could cut"
    );
    assert!(
        handed_off <= kills * SIGNAL_CHATS,
        "more Signal messages lost than kills could cut"
    );

    let median = {
        let mut sorted = restarts.clone();
        sorted.sort();
        sorted[sorted.len() / 2]
    };
    println!(
        "chaos: {kills} SIGKILLs, {} starts (store opened every time; median start-to-ready {median:?}, slowest {:?}), {:.1} s in all, {} model calls\n\
         socket:   {socket_answered}/{} answered once, 0 lost (a copy sent again after a cut has the same reply id)\n\
         Telegram: {telegram_answered}/{} answered once, 0 lost, {telegram_again} replies sent again after a cut; poison update {poison_update} skipped\n\
         Signal:   {signal_answered}/{} answered once, {handed_off} never accepted (handed over by signal-cli as the daemon died), {signal_again} replies sent again after a cut; poison lines skipped",
        restarts.len(),
        restarts.iter().max().unwrap(),
        started.elapsed().as_secs_f64(),
        calls.load(Ordering::SeqCst),
        SOCKET_CHATS * per_chat,
        TELEGRAM_CHATS * per_chat,
        SIGNAL_CHATS * per_chat,
    );
}
