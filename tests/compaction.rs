//! Compaction end to end through the socket, against a fake model that
//! summarises by keeping the lines that mention a locker: a long chat stays
//! within `memory.context_tokens` on every request while a fact from its
//! start still reaches the model through the running summary; the summary
//! survives a restart and `/summary` shows it; a failing summarisation
//! leaves the turn working; `/new` starts without it; its tokens count in
//! `/usage`; a summariser that writes too much is held to the summary's bound.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use passepartout::config::Config;
use passepartout_gateway::ReplyKind;
use serde_json::Value;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::harness::{TestDaemon, ask};

/// What heads the summary in the system prompt.
const NOTE: &str = "Summary of the earlier conversation:\n";
/// The budget the tests set: a few turns' worth.
const BUDGET: usize = 300;

/// Tokens used by each ordinary answer and by each summary.
const TURN_TOKENS: (u64, u64) = (10, 1);
const SUMMARY_TOKENS: (u64, u64) = (1000, 100);

fn compacting(config: &mut Config) {
    config.memory.context_tokens = BUDGET;
}

fn system_of(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Whether `request` asks for a summary rather than an answer.
fn is_summarising(request: &Value) -> bool {
    system_of(request).contains("running summary of a conversation")
}

/// A summariser that keeps every line mentioning a locker, once.
fn summarise(request: &Value) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let text = last_user_text(request);
    for line in text.lines().filter(|line| line.contains("locker")) {
        if !kept.contains(&line) {
            kept.push(line);
        }
    }
    if kept.is_empty() {
        "Nothing worth keeping yet.".to_owned()
    } else {
        kept.join("\n")
    }
}

/// The model: summaries when asked (or a 503 while `failing`), "noted" otherwise.
fn model(llm: &FakeLlm, failing: Arc<AtomicBool>) {
    llm.set_responder(move |request| match is_summarising(request) {
        true if failing.load(Ordering::SeqCst) => Script::status(503),
        true => Script::reply_using(&summarise(request), SUMMARY_TOKENS.0, SUMMARY_TOKENS.1),
        false => Script::reply_using("noted", TURN_TOKENS.0, TURN_TOKENS.1),
    });
}

/// The estimated tokens of the earlier conversation in an answer's request,
/// counted as the daemon counts them (characters / 4, rounded up, per
/// message): the summary in the system prompt, and the messages between
/// the system prompt and the message being answered.
fn earlier_tokens(request: &Value) -> usize {
    let tokens = |text: &str| text.chars().count().div_ceil(4);
    let system = system_of(request);
    let summary = system.split_once(NOTE).map_or(0, |(_, summary)| tokens(summary));
    let messages = request["messages"].as_array().unwrap();
    let earlier = &messages[1..messages.len() - 1];
    summary
        + earlier
            .iter()
            .map(|message| tokens(message["content"].as_str().unwrap_or_default()))
            .sum::<usize>()
}

/// What the person says at turn `n`: the locker code at turn 3, chatter
/// long enough that a few turns fill the budget otherwise.
fn said(n: usize) -> String {
    match n {
        3 => "my locker code is 4711".to_owned(),
        n => format!(
            "message {n}: {}",
            "the weather is fine and the train was late again. ".repeat(2)
        ),
    }
}

fn answers(llm: &FakeLlm) -> Vec<Value> {
    llm.requests().into_iter().filter(|r| !is_summarising(r)).collect()
}

#[tokio::test]
async fn a_long_chat_stays_within_the_budget_and_keeps_an_early_fact_through_the_summary() {
    let llm = FakeLlm::start().await;
    model(&llm, Arc::default());
    let mut daemon = TestDaemon::start_with(&llm, compacting, Vec::new()).await;
    let mut client = daemon.client("alice").await;
    for n in 1..=500 {
        assert_eq!(
            ask(&mut client, &said(n)).await,
            (ReplyKind::Answer, "noted".to_owned()),
            "turn {n}"
        );
    }
    let answered = answers(&llm);
    assert_eq!(answered.len(), 500, "one request per turn");
    let summaries = llm.requests().len() - answered.len();
    assert!(
        summaries >= 50,
        "the oldest turns were folded again and again: {summaries}"
    );
    for (n, request) in answered.iter().enumerate() {
        let used = earlier_tokens(request);
        assert!(used <= BUDGET, "turn {}: {used} tokens of earlier conversation", n + 1);
    }
    let last = answered.last().unwrap();
    let system = system_of(last);
    assert!(
        system.contains(&format!("{NOTE}person: my locker code is 4711")),
        "{system}"
    );
    let messages = last["messages"].as_array().unwrap();
    assert!(
        messages[1..]
            .iter()
            .all(|m| !m["content"].as_str().unwrap_or_default().contains("4711")),
        "turn 3 itself is long out of the context"
    );
    assert!(messages.len() > 2, "recent turns are still shown beside the summary");
    daemon.stop().await;
}

#[tokio::test]
async fn the_summary_survives_a_restart_summary_shows_it_and_new_leaves_it_behind() {
    let llm = FakeLlm::start().await;
    model(&llm, Arc::default());
    let mut daemon = TestDaemon::start_with(&llm, compacting, Vec::new()).await;
    let mut client = daemon.client("alice").await;
    let (_, none) = ask(&mut client, "/summary").await;
    assert!(none.starts_with("There is no summary yet"), "{none}");
    for n in 1..=30 {
        ask(&mut client, &said(n)).await;
    }
    let (kind, shown) = ask(&mut client, "/summary").await;
    assert_eq!(kind, ReplyKind::Notice);
    assert_eq!(shown, format!("{NOTE}person: my locker code is 4711"));
    drop(client);

    daemon.restart(Vec::new()).await;
    let mut client = daemon.client("alice").await;
    assert_eq!(ask(&mut client, "/summary").await.1, shown, "kept across the restart");
    ask(&mut client, "what is my locker code?").await;
    assert!(system_of(answers(&llm).last().unwrap()).contains("4711"));
    let mut bob = daemon.client("bob").await;
    ask(&mut bob, "hello").await;
    assert!(
        !system_of(answers(&llm).last().unwrap()).contains(NOTE),
        "bob's conversation has none"
    );

    let requests = llm.requests().len();
    assert!(ask(&mut client, "/summary").await.1.contains("4711"));
    assert_eq!(llm.requests().len(), requests, "/summary never reaches the model");
    ask(&mut client, "/new").await;
    ask(&mut client, "fresh start").await;
    let fresh = answers(&llm).last().unwrap().clone();
    assert!(!system_of(&fresh).contains(NOTE), "{}", system_of(&fresh));
    assert_eq!(
        fresh["messages"].as_array().unwrap().len(),
        2,
        "no earlier turns either"
    );
    assert!(
        ask(&mut client, "/summary")
            .await
            .1
            .starts_with("There is no summary yet")
    );
    daemon.stop().await;
}

/// Turns while summarising fails: enough to outgrow the budget a few times.
const FAILING_TURNS: usize = 15;

#[tokio::test]
async fn a_failing_summarisation_leaves_the_turn_working_and_summaries_count_in_usage() {
    let llm = FakeLlm::start().await;
    let failing = Arc::new(AtomicBool::new(true));
    model(&llm, failing.clone());
    let mut daemon = TestDaemon::start_with(&llm, compacting, Vec::new()).await;
    let mut client = daemon.client("alice").await;
    for n in 1..=FAILING_TURNS {
        assert_eq!(
            ask(&mut client, &said(n)).await,
            (ReplyKind::Answer, "noted".to_owned()),
            "turn {n}"
        );
    }
    let failed = llm.requests().iter().filter(|r| is_summarising(r)).count();
    assert!(failed > 0, "summaries were asked for");
    for request in answers(&llm) {
        assert!(!system_of(&request).contains(NOTE));
        assert!(
            earlier_tokens(&request) <= BUDGET,
            "what fits of the plain recent turns"
        );
    }
    assert!(
        ask(&mut client, "/summary")
            .await
            .1
            .starts_with("There is no summary yet")
    );

    failing.store(false, Ordering::SeqCst);
    ask(&mut client, "and now?").await;
    assert!(
        ask(&mut client, "/summary").await.1.contains("4711"),
        "the turns were folded once it worked"
    );
    let summaries = llm.requests().iter().filter(|r| is_summarising(r)).count() - failed;
    assert_eq!(summaries, 1);
    let usage = ask(&mut client, "/usage").await.1;
    let turns = FAILING_TURNS as u64 + 1;
    let tokens_in = turns * TURN_TOKENS.0 + SUMMARY_TOKENS.0;
    let tokens_out = turns * TURN_TOKENS.1 + SUMMARY_TOKENS.1;
    assert!(
        usage.contains(&format!(
            "This conversation today: {tokens_in} tokens in, {tokens_out} out"
        )),
        "{usage}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_summariser_that_writes_back_all_it_is_given_is_held_to_a_quarter_of_the_budget() {
    let llm = FakeLlm::start().await;
    // Each summary holds the one before it, and every turn folded.
    llm.set_responder(|request| match is_summarising(request) {
        true => Script::Reply(last_user_text(request)),
        false => Script::Reply("noted".into()),
    });
    let mut daemon = TestDaemon::start_with(&llm, compacting, Vec::new()).await;
    let mut client = daemon.client("alice").await;
    const TURNS: usize = 60;
    for n in 1..=TURNS {
        ask(&mut client, &said(n)).await;
    }
    let (_, shown) = ask(&mut client, "/summary").await;
    let summary = shown.strip_prefix(NOTE).unwrap_or_else(|| panic!("{shown}"));
    // A quarter of the budget, four characters to a token.
    let bound = BUDGET / 4 * 4;
    assert!(
        summary.chars().count() <= bound,
        "{} characters, bound {bound}",
        summary.chars().count()
    );
    assert!(
        !summary.starts_with("The summary so far") && summary.ends_with("assistant: noted"),
        "the oldest part is cut, the newest kept: {summary}"
    );
    let folds = llm.requests().iter().filter(|r| is_summarising(r)).count();
    assert!(folds < TURNS / 2, "a fold now and then, not with every turn: {folds}");
    daemon.stop().await;
}
