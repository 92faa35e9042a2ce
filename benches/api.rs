//! What the OpenAI-compatible API adds to a turn, beside the same turn over
//! the local socket: one daemon (in-process, as `pipeline` runs it) with the
//! web gateway on loopback and a loopback model that echoes at once, and
//! the same message answered, one at a time, three ways, interleaved so
//! that each round meets the machine alike:
//!
//! - over the socket: the message sent, until its reply frame;
//! - `POST /v1/chat/completions`: the request sent, until the whole
//!   `chat.completion` is read;
//! - the same with `stream: true`: until `data: [DONE]`.
//!
//! Each kind speaks in a conversation of its own, so all grow alike.
//! Then the dashboard's overview page, signed in, is fetched as many times:
//! the server's time for a page, from the request sent until its body is
//! read.
//! `cargo bench --bench api` prints one JSON line: the medians and 99th
//! percentiles in milliseconds, the API's overhead (its median less the
//! socket's), and the machine's core count. `PP_BENCH_API_ROUNDS`
//! (default 300) sets the rounds.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use std::time::{Duration, Instant};

use passepartout::config::{Config, ProviderConfig};
use passepartout::{Daemon, Extensions};
use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ServerFrame, WebRequest};
use serde_json::{Value, json};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(dir: &std::path::Path, llm_url: &str) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    config.web.enabled = true;
    config.web.listen = "127.0.0.1:0".parse().expect("an address");
    config.llm.providers = vec![ProviderConfig {
        name: "loopback".into(),
        base_url: llm_url.to_owned(),
        model: "instant".into(),
        ..ProviderConfig::default()
    }];
    config
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    runtime.block_on(async {
        let llm = fake_llm::FakeLlm::start().await;
        llm.set_recording(false);
        let config = config(dir.path(), &llm.base_url());
        let daemon = Daemon::start_with(config.clone(), Extensions::default())
            .await
            .expect("daemon starts");
        let socket = config.socket_path();
        let mut admin = Client::connect(&socket, None).await.expect("connect");
        let link = admin
            .web(WebRequest::Link)
            .await
            .expect("a link")
            .link
            .expect("the dashboard is on");
        let base = link.split("/sign-in/").next().expect("a base").to_owned();
        let created = admin
            .web(WebRequest::CreateKey {
                name: "bench".into(),
                approver: false,
            })
            .await
            .expect("a key");
        let key = created.message.lines().next().expect("the key").to_owned();

        let rounds = env_number("PP_BENCH_API_ROUNDS", 300).max(1);
        let mut chat = Client::connect(&socket, Some(ChatId::new("bench").expect("a chat")))
            .await
            .expect("connect");
        let http = reqwest::Client::new();
        let url = format!("{base}/v1/chat/completions");
        let (mut over_socket, mut whole, mut streamed) = (Vec::new(), Vec::new(), Vec::new());
        for n in 0..rounds {
            over_socket.push(socket_turn(&mut chat, n).await);
            whole.push(api_turn(&http, &url, &key, n, false).await);
            streamed.push(api_turn(&http, &url, &key, n, true).await);
        }
        let overview = overview_pages(&link, &base, rounds).await;
        daemon.shutdown().await.expect("shutdown");
        for samples in [&mut over_socket, &mut whole, &mut streamed] {
            samples.sort();
        }
        let socket_median = percentile(&over_socket, 0.5);
        let report = json!({
            "bench": "api",
            "cores": std::thread::available_parallelism().map_or(1, usize::from),
            "rounds": rounds,
            "socket_ms": {"median": socket_median, "p99": percentile(&over_socket, 0.99)},
            "api_ms": {"median": percentile(&whole, 0.5), "p99": percentile(&whole, 0.99)},
            "api_stream_ms": {"median": percentile(&streamed, 0.5), "p99": percentile(&streamed, 0.99)},
            "api_overhead_ms": percentile(&whole, 0.5) - socket_median,
            "api_stream_overhead_ms": percentile(&streamed, 0.5) - socket_median,
            "overview_page_ms": {"median": percentile(&overview, 0.5), "p99": percentile(&overview, 0.99)},
        });
        println!("{report}");
    });
}

/// One message over the socket, until its reply.
async fn socket_turn(client: &mut Client, n: usize) -> Duration {
    let started = Instant::now();
    let (id, _) = client.send(None, &format!("socket {n}"), None).await.expect("send");
    loop {
        match client.next_event().await.expect("reply") {
            ServerFrame::Reply {
                in_reply_to: Some(answered),
                ..
            } if answered == id => return started.elapsed(),
            _ => {}
        }
    }
}

/// One request to the API, until its whole answer (or `[DONE]`) is read.
async fn api_turn(http: &reqwest::Client, url: &str, key: &str, n: usize, stream: bool) -> Duration {
    let body = json!({
        "model": "passepartout",
        "stream": stream,
        "user": if stream { "streamed" } else { "whole" },
        "messages": [{"role": "user", "content": format!("api {n}")}],
    });
    let started = Instant::now();
    let mut response = http
        .post(url)
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("an answer");
    assert!(response.status().is_success(), "{}", response.status());
    if stream {
        let mut read = String::new();
        while let Some(chunk) = response.chunk().await.expect("the stream") {
            read.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(read.trim_end().ends_with("data: [DONE]"), "{read}");
    } else {
        let answer: Value = response.json().await.expect("JSON");
        assert_eq!(answer["object"], "chat.completion");
    }
    started.elapsed()
}

/// Signs in with the one-time `link`, then fetches the overview `rounds`
/// times; the times, sorted.
async fn overview_pages(link: &str, base: &str, rounds: usize) -> Vec<Duration> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let signed_in = http.get(link).send().await.expect("the sign-in answers");
    let cookie = signed_in
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let page = http
            .get(format!("{base}/"))
            .header(reqwest::header::COOKIE, &cookie)
            .send()
            .await
            .expect("the overview answers");
        assert!(page.status().is_success(), "{}", page.status());
        let body = page.text().await.expect("a page");
        assert!(body.contains("Overview"), "{body}");
        times.push(started.elapsed());
    }
    times.sort();
    times
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1000.0
}
