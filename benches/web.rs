//! What reading a downloaded page costs `http_get`, network aside: a 34 KB
//! news article (27 KB of inline CSS in its head, forty paragraphs) and a
//! 2 MB page of 20,000 paragraphs, each decoded, its main article picked
//! out and turned into Markdown.
//!
//! `cargo bench --bench web` prints one JSON line: per page, its size, the
//! size of the text read from it, and the median and 99th percentile of one
//! reading, in milliseconds, with the number of cores. `PP_BENCH_PAGES`
//! (default 200) sets how many times the article is read; the 2 MB page is
//! read a tenth as often.

use std::hint::black_box;
use std::time::{Duration, Instant};

use passepartout::safety::tools::readable::{ContentType, read};

const URL: &str = "https://news.example/2026/harbour.html";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A news article as such pages come: styles first, then the story.
fn article() -> String {
    let css: String = (0..600)
        .map(|i| format!(".block-{i} {{ margin: {i}px; color: #abcdef; }}\n"))
        .collect();
    let paragraphs: String = (1..=40)
        .map(|i| {
            format!(
                "<p>Paragraph {i} of the story goes on about the harbour, the boats and the people who \
                 mend the nets there, and what they said about the winter storms and the price of fish.</p>\n"
            )
        })
        .collect();
    format!(
        "<!DOCTYPE html><html><head><title>The harbour in winter</title><style>{css}</style>\
         <script>window.tracking = {{ id: 42 }};</script></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/sport\">Sport</a></nav>\
         <article><h1>The harbour in winter</h1><h2>The boats</h2>{paragraphs}</article>\
         <footer>All rights reserved</footer></body></html>"
    )
}

/// A 2 MB page: one long article of short paragraphs with links.
fn long_page() -> String {
    let body: String = (0..14_000)
        .map(|i| {
            format!(
                "<p>Entry {i:05}: {} <a href=\"/entry/{i}\">more</a></p>\n",
                "words of the long page ".repeat(4)
            )
        })
        .collect();
    format!("<html><head><title>Long</title></head><body><article>{body}</article></body></html>")
}

/// The median and 99th percentile of `samples`, in milliseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

/// Reads `page` `samples` times after a warm-up; its JSON figures.
fn measure(page: &str, samples: usize) -> String {
    let content = ContentType::parse("text/html; charset=utf-8");
    let once = || read(page.as_bytes(), &content, URL, 50).expect("a page").text.len();
    let text_bytes = once();
    let timed = (0..samples)
        .map(|_| {
            let started = Instant::now();
            black_box(once());
            started.elapsed()
        })
        .collect();
    let (median, p99) = percentiles(timed);
    format!(
        r#"{{"page_bytes":{},"text_bytes":{text_bytes},"median_ms":{median:.2},"p99_ms":{p99:.2}}}"#,
        page.len()
    )
}

fn main() {
    let samples = env_number("PP_BENCH_PAGES", 200).max(10);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let article = measure(&article(), samples);
    let long = measure(&long_page(), samples / 10);
    println!(r#"{{"cores":{cores},"article_34kb":{article},"page_2mb":{long}}}"#);
}
