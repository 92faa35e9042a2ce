//! What recalling facts costs per turn: a person with 10,000 facts (English,
//! German and Chinese sentences), and the 8 most related to a message picked
//! with BM25, as every turn does (`memory::relevant` reads every fact's
//! words afresh each time, counting only the query's); and, for comparison,
//! a query against a whole index built once, which is what keeping an index
//! between turns would buy, and what building that index costs.
//!
//! `cargo bench --bench memory` prints one JSON line: for each, the median
//! and the 99th percentile of one query, in microseconds.
//! `PP_BENCH_FACTS` (default 10000) sets how many facts, `PP_BENCH_QUERIES`
//! (default 200) how many queries are timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use passepartout::foundation::ranking::Bm25;
use passepartout::model::memory::relevant;
use passepartout::store::Fact;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `count` facts of the length and mix people keep.
fn facts(count: usize) -> Vec<Fact> {
    let subjects = [
        "Ann",
        "Bob",
        "the dentist",
        "my sister",
        "the landlord",
        "Oma",
        "the cat",
        "Kai",
    ];
    let english = [
        "has an appointment on Friday at {n}:00",
        "likes green tea with no sugar, cup number {n}",
        "parks the car in garage {n} near the station",
        "was born in {n} and loves hiking in the mountains",
    ];
    let german = [
        "hat am Montag um {n} Uhr einen Termin beim Arzt",
        "trinkt gern grünen Tee, Tasse {n}",
    ];
    let chinese = ["我喜欢喝绿茶，第{n}杯", "明天下午{n}点开会", "我的猫叫小米，{n}岁"];
    (0..count)
        .map(|i| {
            let n = (i * 7919 % 1000).to_string();
            let text = match i % 3 {
                0 => format!("{} {}", subjects[i % subjects.len()], english[i / 3 % english.len()]),
                1 => format!("{} {}", subjects[i % subjects.len()], german[i / 3 % german.len()]),
                _ => chinese[i / 3 % chinese.len()].to_owned(),
            };
            Fact {
                id: i as u64,
                text: text.replace("{n}", &n),
                created_ms: 0,
            }
        })
        .collect()
}

const QUERIES: [&str; 4] = [
    "when are my appointments with the dentist?",
    "Welche Termine habe ich am Montag?",
    "我喜欢什么茶",
    "what does Ann like to drink",
];

/// The median and 99th percentile of `samples`, in microseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

/// Times `work` once per sample after a warm-up.
fn measure(samples: usize, mut work: impl FnMut(usize) -> usize) -> (f64, f64) {
    for i in 0..samples / 10 {
        black_box(work(i));
    }
    let timed = (0..samples)
        .map(|i| {
            let started = Instant::now();
            black_box(work(i));
            started.elapsed()
        })
        .collect();
    percentiles(timed)
}

fn main() {
    let count = env_number("PP_BENCH_FACTS", 10_000).max(1);
    let samples = env_number("PP_BENCH_QUERIES", 200).max(10);
    let facts = facts(count);
    // The facts are cloned per query, as a turn reads them afresh from the store.
    let per_turn = measure(samples, |i| {
        relevant(facts.clone(), QUERIES[i % QUERIES.len()], 8).len()
    });
    let index = Bm25::new(facts.iter().map(|fact| fact.text.as_str()));
    let indexed = measure(samples, |i| index.scores(QUERIES[i % QUERIES.len()]).len());
    let (build, _) = measure(10, |_| Bm25::new(facts.iter().map(|fact| fact.text.as_str())).len());
    println!(
        r#"{{"bench":"memory","facts":{count},"queries":{samples},"relevant_per_turn":{{"median_us":{:.1},"p99_us":{:.1}}},"query_on_kept_index":{{"median_us":{:.1},"p99_us":{:.1}}},"index_build_median_us":{build:.1}}}"#,
        per_turn.0, per_turn.1, indexed.0, indexed.1
    );
}
