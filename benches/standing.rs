//! What asking the standing rules costs on the hot path: act asks them
//! about every call the skills hold for approval. A real sled store in a
//! temporary directory holds `PP_BENCH_RULES` (default 1,000) rules, laid
//! out three ways, and one call is matched against them:
//! - `elsewhere`: every rule belongs to another conversation or tool (100
//!   conversations × 10 tools) — the usual case; nothing covers the call;
//! - `one_of_many`: the same, plus the one rule that covers the call;
//! - `all_here`: every rule is for this conversation's shell, none covers
//!   the call — the worst case, each rule read and tried.
//!
//! `cargo bench --bench standing` prints one JSON line: for each, the
//! median and the 99th percentile of one match, in microseconds.
//! `PP_BENCH_MATCHES` (default 5,000) sets how many matches are timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use passepartout::config::StoreConfig;
use passepartout::foundation::clock::Clock;
use passepartout::safety::approvals::StandingRules;
use passepartout::safety::skills::ProposedCall;
use passepartout::store::{Person, Scope, StandingRule, Store};
use passepartout_gateway::{ApprovalToken, ChatId, ConversationKey, GatewayId, UserId};
use serde_json::json;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn conversation(chat: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new(chat).unwrap())
}

fn rule(conversation: ConversationKey, tool: &str, scope: Scope) -> StandingRule {
    StandingRule {
        id: 0,
        conversation,
        tool: tool.into(),
        scope,
        created_ms: 0,
        expires_ms: u64::MAX,
        by: Person::known_as(GatewayId::new("telegram").unwrap(), UserId::new("42").unwrap()),
        how: None,
        approval: ApprovalToken::new("K7PX2QMD").unwrap(),
    }
}

/// A store in a fresh directory with `rules` in it.
fn store_with(dir: &tempfile::TempDir, rules: impl IntoIterator<Item = StandingRule>) -> Store {
    let store = Store::open(&dir.path().join("store"), &StoreConfig::default()).expect("store");
    for rule in rules {
        store.add_standing_rule(&rule, "bench").expect("rule kept");
    }
    store
}

/// `count` rules none of which is for the shell in `telegram:here`.
fn elsewhere(count: usize) -> Vec<StandingRule> {
    let tools = [
        "shell",
        "read_file",
        "write_file",
        "http_get",
        "record",
        "list_dir",
        "send_file",
        "mcp__a",
        "mcp__b",
        "mcp__c",
    ];
    (0..count)
        .map(|i| {
            let tool = tools[i % tools.len()];
            let scope = Scope::Command {
                command: format!("make target-{i}"),
            };
            rule(conversation(&format!("chat-{}", i / tools.len())), tool, scope)
        })
        .collect()
}

/// The median and 99th percentile, in microseconds, of `samples` matches.
fn measure(rules: &StandingRules, call: &ProposedCall, samples: usize, expect: bool) -> (f64, f64) {
    let here = conversation("here");
    for _ in 0..samples / 10 {
        assert_eq!(black_box(rules.covering(&here, call)).is_some(), expect);
    }
    let mut timed: Vec<Duration> = (0..samples)
        .map(|_| {
            let started = Instant::now();
            black_box(rules.covering(&here, call));
            started.elapsed()
        })
        .collect();
    timed.sort_unstable();
    let at = |q: f64| timed[((timed.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

fn main() {
    let count = env_number("PP_BENCH_RULES", 1_000).max(1);
    let samples = env_number("PP_BENCH_MATCHES", 5_000).max(10);
    let call = ProposedCall {
        tool: "shell".into(),
        arguments: json!({ "command": "git status --short" }),
    };
    let covering = rule(
        conversation("here"),
        "shell",
        Scope::CommandPrefix {
            words: vec!["git".into(), "status".into()],
        },
    );
    let not_covering = |i: usize| {
        rule(
            conversation("here"),
            "shell",
            Scope::Command {
                command: format!("git status; make target-{i}"),
            },
        )
    };

    let mut figures = Vec::new();
    let layouts: [(&str, Vec<StandingRule>, bool); 3] = [
        ("elsewhere", elsewhere(count), false),
        (
            "one_of_many",
            elsewhere(count - 1).into_iter().chain([covering]).collect(),
            true,
        ),
        ("all_here", (0..count).map(not_covering).collect(), false),
    ];
    for (name, rules, expect) in layouts {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(&dir, rules);
        let standing = StandingRules::new(store, Clock::system(), 30);
        let (p50, p99) = measure(&standing, &call, samples, expect);
        figures.push(format!(r#""{name}":{{"median_us":{p50:.2},"p99_us":{p99:.2}}}"#));
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        r#"{{"bench":"standing","rules":{count},"matches":{samples},"cores":{cores},{}}}"#,
        figures.join(",")
    );
}
