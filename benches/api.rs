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
//! Each kind speaks in a conversation of its own, so all grow alike. The
//! API's clients resend their whole history with each request, as clients
//! do, which the gateway matches with the conversation it continues; each
//! API conversation goes on for [`TURNS`] turns (98 messages resent before
//! the last one), then a new one begins.
//! Then the matching alone, at that length: the resent history hashed and
//! looked up in the store's index among as many conversations as were
//! held, many times over (`match_50_turns_us`, which must stay under a
//! millisecond).
//! Then the dashboard's overview page and the chat page (the chat `/chat`
//! opens), signed in, are fetched as many times each: the server's time for
//! a page, from the request sent until its body is read.
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

/// Turns of one API conversation before a new one begins.
const TURNS: usize = 50;

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
            .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web { request: WebRequest::Link })
            .await
            .expect("a link")
            .link
            .expect("the dashboard is on");
        let base = link.split("/sign-in/").next().expect("a base").to_owned();
        let created = admin
            .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web { request: WebRequest::CreateKey {
                name: "bench".into(),
                approver: false,
            } })
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
        let (mut whole_said, mut streamed_said) = (Vec::new(), Vec::new());
        for n in 0..rounds {
            if n % TURNS == 0 {
                whole_said.clear();
                streamed_said.clear();
            }
            over_socket.push(socket_turn(&mut chat, n).await);
            whole.push(api_turn(&http, &url, &key, n, &mut whole_said, false).await);
            streamed.push(api_turn(&http, &url, &key, n, &mut streamed_said, true).await);
        }
        let (overview, chat_page) = pages(&link, &base, rounds).await;
        daemon.shutdown().await.expect("shutdown");
        for samples in [&mut over_socket, &mut whole, &mut streamed] {
            samples.sort();
        }
        let socket_median = percentile(&over_socket, 0.5);
        let matching = matching_at_50_turns(dir.path(), rounds);
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
            "chat_page_ms": {"median": percentile(&chat_page, 0.5), "p99": percentile(&chat_page, 0.99)},
            "match_50_turns_us": {"median": percentile(&matching, 0.5) * 1000.0, "p99": percentile(&matching, 0.99) * 1000.0},
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

/// One request to the API, with the conversation `said` so far resent
/// before its new message, until its whole answer (or `[DONE]`) is read;
/// `said` then holds the message and the answer too.
async fn api_turn(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    n: usize,
    said: &mut Vec<Value>,
    stream: bool,
) -> Duration {
    said.push(json!({"role": "user", "content": format!("api {n}: {}", "a question of ordinary length. ".repeat(3))}));
    let body = json!({
        "model": "passepartout",
        "stream": stream,
        "messages": said,
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
    let answer = if stream {
        let mut read = String::new();
        while let Some(chunk) = response.chunk().await.expect("the stream") {
            read.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(read.trim_end().ends_with("data: [DONE]"), "{read}");
        read.split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
            .collect::<String>()
    } else {
        let answer: Value = response.json().await.expect("JSON");
        assert_eq!(answer["object"], "chat.completion");
        answer["choices"][0]["message"]["content"]
            .as_str()
            .expect("content")
            .to_owned()
    };
    let elapsed = started.elapsed();
    said.push(json!({"role": "assistant", "content": answer}));
    elapsed
}

/// The matching of a resent history of [`TURNS`] turns, `rounds` times: the
/// 98 messages before the new one hashed, and the tip looked up in an index
/// (in a store of its own) holding as many conversations; the times,
/// sorted.
fn matching_at_50_turns(dir: &std::path::Path, rounds: usize) -> Vec<Duration> {
    use passepartout::gateways::web::threads::WebThreads;
    use passepartout::store::Store;
    use passepartout_gateway::EarlierRole;
    use passepartout_web::Threads;
    use passepartout_web::api::chain::Chain;

    let store = Store::open(&dir.join("matching"), &Default::default()).expect("a store");
    let threads = WebThreads::new(store);
    let question = "a question of ordinary length. ".repeat(3);
    let answer = "an answer of ordinary length, a little longer than the question. ".repeat(4);
    let history = |n: usize| -> Vec<(EarlierRole, String)> {
        let mut said = Vec::new();
        for turn in 1..TURNS {
            said.push((EarlierRole::User, format!("{n}.{turn}: {question}")));
            said.push((EarlierRole::Assistant, answer.clone()));
        }
        said
    };
    let tip = |said: &[(EarlierRole, String)]| {
        let mut chain = Chain::new("key-bench");
        for (role, text) in said {
            chain.push(*role, text);
        }
        chain.tip()
    };
    let held = rounds.max(1);
    for n in 0..held {
        let chat = ChatId::new(format!("key-bench/~{n}")).expect("a chat");
        threads.advance("bench", &chat, &tip(&history(n))).expect("kept");
    }
    let mut times = Vec::with_capacity(held);
    for n in 0..held {
        let said = history(n);
        let started = Instant::now();
        let found = threads.find("bench", &tip(&said)).expect("read");
        times.push(started.elapsed());
        assert!(found.is_some(), "matched");
    }
    times.sort();
    times
}

/// Signs in with the one-time `link`, then fetches the overview and the
/// chat page `rounds` times each; the times, sorted.
async fn pages(link: &str, base: &str, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
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
    // `/chat` sends the browser on to the chat it opens.
    let opened = http
        .get(format!("{base}/chat"))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .expect("the chat answers");
    let chat = match opened.headers().get(reqwest::header::LOCATION) {
        Some(location) => location.to_str().expect("a location").to_owned(),
        None => "/chat".to_owned(),
    };
    let timed = |path: String, shows: &'static str| {
        let (http, cookie) = (&http, &cookie);
        async move {
            let mut times = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let started = Instant::now();
                let page = http
                    .get(format!("{base}{path}"))
                    .header(reqwest::header::COOKIE, cookie)
                    .send()
                    .await
                    .expect("the page answers");
                assert!(page.status().is_success(), "{path}: {}", page.status());
                let body = page.text().await.expect("a page");
                assert!(body.contains(shows), "{body}");
                times.push(started.elapsed());
            }
            times.sort();
            times
        }
    };
    let overview = timed("/".to_owned(), "Overview").await;
    let chat = timed(chat, "Chat").await;
    (overview, chat)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1000.0
}
