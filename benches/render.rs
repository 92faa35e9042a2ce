//! What rendering and splitting cost per reply: a 4 KB Markdown answer with
//! code blocks, a table, a list and links, turned into the messages each
//! platform is sent — Telegram's text and entities, Signal's text and text
//! styles (split at 2000 bytes, so in several parts) — and into what a
//! terminal prints.
//!
//! `cargo bench --bench render` prints one JSON line: per surface, the
//! median and the 99th percentile of one reply, in microseconds.
//! `PP_BENCH_RENDERS` (default 5000) sets how many replies are timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use passepartout_gateway::markup::{Flavor, render};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// About 4 KB of the Markdown a model writes when asked how to do something.
fn reply() -> String {
    let mut text = String::from(
        "## Setting up the **backup** job 😀\n\nHere is what I would do, in order:\n\n\
         1. Install `restic` with your package manager.\n\
         2. Create a repository, see [the docs](https://restic.readthedocs.io/en/stable/).\n\
         3. Schedule it with a *systemd timer* — not ~~cron~~.\n\n\
         ```sh\nrestic init --repo /srv/backup\nexport RESTIC_PASSWORD_FILE=/etc/restic/pass\n\
         restic backup /home --exclude-caches\n```\n\n\
         | option | meaning |\n|---|---|\n| `--exclude-caches` | skip cache dirs |\n| `--one-file-system` | stay on one fs |\n\n\
         > Keep the password file out of the backup itself.\n\n",
    );
    let mut section = 0;
    while text.len() < 4096 {
        section += 1;
        text.push_str(&format!(
            "### Step {section}: check 中文 paths\n\nRun **this** and compare with `restic snapshots`:\n\n\
             ```python\nfor path in paths:\n    if not check(path):  # 😀\n        print(f\"missing {{path}}\")\n```\n\n\
             - it lists *every* snapshot\n- it needs [the key](https://example.com/key)\n\n"
        ));
    }
    text
}

/// The median and 99th percentile of `samples`, in microseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

/// Times `work` once per sample after a warm-up.
fn measure(samples: usize, mut work: impl FnMut() -> usize) -> (f64, f64, usize) {
    let mut parts = 0;
    for _ in 0..samples / 10 {
        parts = black_box(work());
    }
    let timed = (0..samples)
        .map(|_| {
            let started = Instant::now();
            black_box(work());
            started.elapsed()
        })
        .collect();
    let (median, p99) = percentiles(timed);
    (median, p99, parts)
}

fn main() {
    let samples = env_number("PP_BENCH_RENDERS", 5_000).max(10);
    let text = reply();
    let telegram = measure(samples, || passepartout_telegram::parts(&text).len());
    let signal = measure(samples, || {
        passepartout_signal::reply::parts(&text, passepartout_signal::SIGNAL_TEXT_LIMIT).len()
    });
    let parse = measure(samples, || render(&text, Flavor::RICH).spans.len());
    let surface = |(median, p99, parts): (f64, f64, usize)| {
        format!(r#"{{"median_us":{median:.1},"p99_us":{p99:.1},"parts":{parts}}}"#)
    };
    println!(
        r#"{{"bench":"render","reply_bytes":{},"samples":{samples},"telegram":{},"signal":{},"render_only":{}}}"#,
        text.len(),
        surface(telegram),
        surface(signal),
        surface(parse),
    );
}
