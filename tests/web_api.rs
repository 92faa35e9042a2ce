//! The OpenAI-compatible API end to end: a real daemon with `[web]` on port
//! 0, keys made with the real `passepartout web keys create`, the fake model
//! behind it, and two clients: reqwest, so each test says exactly what goes
//! over the wire, and the official `openai` Python client. `/metrics`
//! counts what happened, a gateway's restart too (Telegram's, against the
//! fake Bot API refusing a poll). A request's messages are its
//! conversation: the official client's chats stay apart, continue by their
//! history, branch when regenerated or edited, and bring their system
//! prompt; an approval a plain key cannot give is the owner's, on the
//! dashboard.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support;
use support::fake_llm::{FakeLlm, Script, Streamed, last_user_text};
use support::fake_telegram::{FakeFailure, FakeTelegram};
use support::harness::{TestDaemon, WAIT};
use support::process::run_cli;

struct Api {
    daemon: TestDaemon,
    llm: FakeLlm,
    cli_config: PathBuf,
    base: String,
    http: reqwest::Client,
}

async fn start() -> Api {
    start_with(|_| {}).await
}

async fn start_with(adjust: impl FnOnce(&mut passepartout::config::Config)) -> Api {
    let llm = FakeLlm::start().await;
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
            adjust(config);
        },
        Vec::new(),
    )
    .await;
    let cli_config = daemon.cli_config(&llm);
    let mut api = Api {
        daemon,
        llm,
        cli_config,
        base: String::new(),
        http: reqwest::Client::new(),
    };
    let link = api.cli(&["web"]).await;
    api.base = link
        .lines()
        .next()
        .unwrap()
        .split("/sign-in/")
        .next()
        .unwrap()
        .to_owned();
    api
}

impl Api {
    /// Signs a browser in with a new link: its session cookie's `name=value`.
    async fn sign_in(&self) -> String {
        let link = self.cli(&["web"]).await;
        let link = link.lines().next().unwrap();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let response = client.get(link).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
        set_cookie.split(';').next().unwrap().to_owned()
    }

    /// Runs `passepartout ARGS`, which must succeed; what it printed.
    async fn cli(&self, args: &[&str]) -> String {
        let output = run_cli(&self.cli_config, args).await;
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// A new key called `name`.
    async fn key(&self, name: &str) -> String {
        self.made(&["web", "keys", "create", name]).await
    }

    /// A new key called `name` that approves what its conversations ask.
    async fn approver_key(&self, name: &str) -> String {
        self.made(&["web", "keys", "create", name, "--approver"]).await
    }

    /// The key the command `create` made.
    async fn made(&self, create: &[&str]) -> String {
        let shown = self.cli(create).await;
        let key = shown.lines().next().unwrap().to_owned();
        assert!(key.starts_with("pp-"), "{shown}");
        key
    }

    async fn post(&self, key: Option<&str>, body: &Value) -> reqwest::Response {
        self.post_raw(key, body.to_string().into_bytes(), None).await
    }

    async fn post_raw(&self, key: Option<&str>, body: Vec<u8>, conversation: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}/v1/chat/completions", self.base))
            .header("content-type", "application/json")
            .body(body);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(conversation) = conversation {
            request = request.header("x-conversation", conversation);
        }
        tokio::time::timeout(WAIT, request.send())
            .await
            .expect("an answer in time")
            .unwrap()
    }

    /// A plain completion's content, which must succeed.
    async fn ask(&self, key: &str, body: Value) -> Value {
        let response = self.post(Some(key), &body).await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.unwrap()
    }
}

fn user(text: &str) -> Value {
    json!({"model": "passepartout", "messages": [{"role": "user", "content": text}]})
}

/// The `data:` payloads of a server-sent event stream, read to its end.
async fn events(mut response: reqwest::Response) -> Vec<String> {
    let mut body = String::new();
    while let Some(chunk) = tokio::time::timeout(WAIT, response.chunk())
        .await
        .expect("the stream goes on")
        .unwrap()
    {
        body.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    body.split("\n\n")
        .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
        .map(str::to_owned)
        .collect()
}

/// The error object of a refused request, checked for OpenAI's shape.
async fn refusal(response: reqwest::Response, status: StatusCode) -> Value {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    let error = &body["error"];
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(error["type"].is_string(), "{body}");
    assert!(error.get("param").is_some() && error.get("code").is_some(), "{body}");
    error.clone()
}

#[tokio::test]
async fn a_plain_and_a_streamed_completion_over_http() {
    let mut api = start().await;
    let key = api.key("laptop").await;

    let models: Value = api
        .http
        .get(format!("{}/v1/models", api.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "passepartout");

    api.llm.push(Script::reply_using("Hello there.", 7, 3));
    let whole = api.ask(&key, user("hi")).await;
    assert_eq!(whole["object"], "chat.completion");
    assert!(whole["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(whole["choices"][0]["message"]["role"], "assistant");
    assert_eq!(whole["choices"][0]["message"]["content"], "Hello there.");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        whole["usage"],
        json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    );

    api.llm
        .push(Script::Stream(Streamed::text(&["Stream", "ed ", "answer."])));
    let mut body = user("stream it");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let response = api.post(Some(&key), &body).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = events(response).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{events:#?}");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(
        chunks.iter().all(|c| c["object"] == "chat.completion.chunk"),
        "{chunks:#?}"
    );
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]), "one id throughout");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Streamed answer.");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop", "{chunks:#?}");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    let used = &usage["usage"];
    assert_eq!(
        used["total_tokens"].as_u64().unwrap(),
        used["prompt_tokens"].as_u64().unwrap() + used["completion_tokens"].as_u64().unwrap()
    );
    assert!(used["prompt_tokens"].as_u64().unwrap() > 0, "{used}");
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_key_reaches_only_its_own_conversations() {
    let mut api = start().await;
    let (a, b) = (api.key("a").await, api.key("b").await);
    let shared = |key: &str, text: &str| {
        let (key, body) = (key.to_owned(), user(text).to_string().into_bytes());
        let api = &api;
        async move {
            let response = api.post_raw(Some(&key), body, Some("shared")).await;
            assert_eq!(response.status(), StatusCode::OK);
        }
    };
    shared(&a, "A's secret plan").await;
    shared(&b, "what was said?").await;
    let prompt = api.llm.requests().last().unwrap().to_string();
    assert!(
        !prompt.contains("A's secret plan"),
        "B's turn saw A's conversation: {prompt}"
    );

    // A's own conversation, by the header, does hold it.
    let response = api
        .post_raw(Some(&a), user("and now?").to_string().into_bytes(), Some("shared"))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        api.llm
            .requests()
            .last()
            .unwrap()
            .to_string()
            .contains("A's secret plan")
    );

    let escape = api
        .post_raw(Some(&b), user("x").to_string().into_bytes(), Some("../key-a"))
        .await;
    let error = refusal(escape, StatusCode::BAD_REQUEST).await;
    assert_eq!(error["param"], "user");

    api.cli(&["web", "keys", "revoke", "a"]).await;
    let revoked = api.post(Some(&a), &user("still there?")).await;
    refusal(revoked, StatusCode::UNAUTHORIZED).await;
    let listing = api.cli(&["web", "keys"]).await;
    assert!(listing.contains(" b\n") && !listing.contains(" a\n"), "{listing}");
    assert!(!listing.contains(&b), "never the key itself: {listing}");
    api.daemon.stop().await;
}

#[tokio::test]
async fn what_the_api_cannot_serve_gets_the_openai_error_object() {
    let mut api = start().await;
    let key = api.key("k").await;
    let before = api.llm.requests().len();

    let error = refusal(api.post(None, &user("hi")).await, StatusCode::UNAUTHORIZED).await;
    assert_eq!(error["type"], "authentication_error");
    refusal(
        api.post(Some("pp-not-a-key"), &user("hi")).await,
        StatusCode::UNAUTHORIZED,
    )
    .await;

    let mut tools = user("hi");
    tools["tools"] = json!([{"type": "function", "function": {"name": "f"}}]);
    assert_eq!(
        refusal(api.post(Some(&key), &tools).await, StatusCode::BAD_REQUEST).await["param"],
        "tools"
    );
    let mut two = user("hi");
    two["n"] = json!(2);
    assert_eq!(
        refusal(api.post(Some(&key), &two).await, StatusCode::BAD_REQUEST).await["param"],
        "n"
    );
    let mut audio = user("hi");
    audio["modalities"] = json!(["text", "audio"]);
    refusal(api.post(Some(&key), &audio).await, StatusCode::BAD_REQUEST).await;
    let last_assistant = json!({"model": "passepartout", "messages": [{"role": "assistant", "content": "x"}]});
    let error = refusal(api.post(Some(&key), &last_assistant).await, StatusCode::BAD_REQUEST).await;
    assert!(
        error["message"].as_str().unwrap().contains("must be the user's"),
        "{error}"
    );

    let tool_result = json!({"model": "passepartout", "messages": [
        {"role": "user", "content": "q"},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
        {"role": "user", "content": "and?"},
    ]});
    let error = refusal(api.post(Some(&key), &tool_result).await, StatusCode::BAD_REQUEST).await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Message 1 is a tool's result"),
        "{error}"
    );
    let no_role = json!({"model": "passepartout", "messages": [{"content": "who?"}, {"role": "user", "content": "x"}]});
    let error = refusal(api.post(Some(&key), &no_role).await, StatusCode::BAD_REQUEST).await;
    assert_eq!(error["message"], "Message 0 has no role.");

    let malformed = api.post_raw(Some(&key), b"{\"model\": ".to_vec(), None).await;
    assert_eq!(
        refusal(malformed, StatusCode::BAD_REQUEST).await["code"],
        "invalid_json"
    );
    let huge = vec![b' '; 5 * 1024 * 1024];
    refusal(
        api.post_raw(Some(&key), huge, None).await,
        StatusCode::PAYLOAD_TOO_LARGE,
    )
    .await;

    assert_eq!(api.llm.requests().len(), before, "nothing refused reached the model");
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_request_without_a_valid_key_is_refused_before_its_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut api = start().await;
    let address = api.base.trim_start_matches("http://").to_owned();
    // A body announced at the API's largest and never sent: answered at
    // once, since the key is checked before the body is read.
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer pp-not-a-key\r\n\
         Content-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 12];
    tokio::time::timeout(WAIT, stream.read_exact(&mut answer))
        .await
        .expect("answered without the body")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&answer), "HTTP/1.1 401");
    api.daemon.stop().await;
}

#[tokio::test]
async fn wrong_keys_are_held_and_a_valid_key_still_passes() {
    let mut api = start().await;
    let key = api.key("owner-laptop").await;
    for n in 0..10 {
        let wrong = api.post(Some(&format!("pp-wrong{n}")), &user("hi")).await;
        refusal(wrong, StatusCode::UNAUTHORIZED).await;
    }
    let held = api.post(Some("pp-wrong10"), &user("hi")).await;
    let error = refusal(held, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(error["code"], "rate_limit_exceeded", "{error}");
    // Every client behind a proxy has one address: the wrong keys tried
    // from it hold no valid key.
    let answered = api.post(Some(&key), &user("hi")).await;
    assert_eq!(answered.status(), StatusCode::OK);
    api.daemon.stop().await;
}

/// A request of `key` whose body is announced and not yet sent, once the
/// server has started reading it (it answered `100 Continue`): its place
/// among the requests being answered is taken.
async fn request_being_read(address: &str, key: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 25];
    tokio::time::timeout(WAIT, stream.read_exact(&mut answer))
        .await
        .expect("the server reads the body")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&answer), "HTTP/1.1 100 Continue\r\n\r\n");
    stream
}

#[tokio::test]
async fn a_key_with_too_many_requests_at_once_is_held_and_other_keys_pass() {
    use passepartout_web::api::in_flight::PER_KEY;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut api = start().await;
    let busy = api.key("busy").await;
    let calm = api.key("calm").await;
    let address = api.base.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..PER_KEY {
        held.push(request_being_read(&address, &busy).await);
    }
    // One more of the same key: 429 with OpenAI's error object, before
    // its body is read.
    let refused = api.post_raw(Some(&busy), b"not json".to_vec(), None).await;
    let error = refusal(refused, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(error["code"], "rate_limit_exceeded", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{PER_KEY} requests being answered")),
        "{error}"
    );
    // Another key is not held up: its request is read (and this one is
    // not JSON).
    let other = api.post_raw(Some(&calm), b"not json".to_vec(), None).await;
    refusal(other, StatusCode::BAD_REQUEST).await;

    // One held request is answered (its body is not a request): its place
    // is given back, and the busy key is read again.
    let mut first = held.remove(0);
    first.write_all(b"{}").await.unwrap();
    let mut status = vec![0; 12];
    tokio::time::timeout(WAIT, first.read_exact(&mut status))
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status), "HTTP/1.1 400");
    let again = api.post_raw(Some(&busy), b"not json".to_vec(), None).await;
    refusal(again, StatusCode::BAD_REQUEST).await;
    drop(held);
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_client_gone_mid_stream_still_has_its_turn_kept() {
    let mut api = start().await;
    let key = api.key("flaky").await;
    let words: Vec<String> = (0..40).map(|n| format!("w{n} ")).collect();
    let pieces: Vec<&str> = words.iter().map(String::as_str).collect();
    api.llm.push(Script::Stream(
        Streamed::text(&pieces).spaced(Duration::from_millis(25)),
    ));
    let mut body = user("a long one");
    body["stream"] = json!(true);
    let mut response = api
        .post_raw(Some(&key), body.to_string().into_bytes(), Some("flaky"))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    // Read until the first words arrive, then hang up.
    let mut seen = String::new();
    while !seen.contains("w0") {
        let chunk = tokio::time::timeout(WAIT, response.chunk())
            .await
            .unwrap()
            .unwrap()
            .expect("more");
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(response);

    // The next turn's prompt holds the whole earlier answer: it was kept.
    let whole = words.concat();
    let next = api
        .post_raw(Some(&key), user("and then?").to_string().into_bytes(), Some("flaky"))
        .await;
    let next: Value = next.json().await.unwrap();
    assert_eq!(next["choices"][0]["message"]["content"], "echo: and then?");
    let prompt = api.llm.requests().last().unwrap().to_string();
    assert!(prompt.contains(whole.trim()), "the first turn was kept whole: {prompt}");
    api.daemon.stop().await;
}

#[tokio::test]
async fn the_official_openai_client_talks_to_the_api() {
    let mut api = start().await;
    let key = api.key("python").await;
    let client = format!(
        "import json, openai\nclient = openai.OpenAI(base_url={base:?}, api_key={key:?})\n",
        base = format!("{}/v1", api.base),
    );
    let plain = support::python::run_json(&format!(
        "{client}r = client.chat.completions.create(model='passepartout', messages=[{{'role': 'user', 'content': 'from python'}}])\nprint(r.model_dump_json())"
    ))
    .await;
    assert_eq!(plain["choices"][0]["message"]["content"], "echo: from python");
    assert!(plain["usage"]["total_tokens"].as_u64().is_some(), "{plain}");

    let streamed = support::python::run_json(&format!(
        "{client}s = client.chat.completions.create(model='passepartout', stream=True, stream_options={{'include_usage': True}}, messages=[{{'role': 'user', 'content': 'streamed from python'}}])\n\
         text, usage = '', None\n\
         for c in s:\n    usage = c.usage or usage\n    text += ''.join(ch.delta.content or '' for ch in c.choices)\n\
         print(json.dumps({{'text': text, 'usage': usage.total_tokens if usage else None}}))"
    ))
    .await;
    assert_eq!(streamed["text"], "echo: streamed from python");
    assert!(streamed["usage"].as_u64().is_some(), "{streamed}");

    let refused = support::python::run(&format!(
        "import openai\nclient = openai.OpenAI(base_url={base:?}, api_key='pp-wrong')\n\
         try:\n    client.chat.completions.create(model='passepartout', messages=[{{'role': 'user', 'content': 'x'}}])\n    print('taken')\n\
         except openai.AuthenticationError as e:\n    print('refused', e.status_code)",
        base = format!("{}/v1", api.base),
    ))
    .await;
    assert_eq!(refused.trim(), "refused 401");
    api.daemon.stop().await;
}

#[tokio::test]
async fn metrics_are_prometheus_text_for_a_key_or_a_signed_in_browser_only() {
    let mut api = start().await;
    let key = api.approver_key("scraper").await;
    api.ask(&key, user("count me")).await;
    // A provider failure: the only model answers 500 once.
    api.llm.push(Script::status(500));
    api.post(Some(&key), &user("fail me")).await;
    // An approval asked and approved.
    api.llm.set_responder(support::approvals::model);
    let asked = api.ask(&key, user("please run it")).await;
    let text = asked["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    let token = text
        .split("Send `approve ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no approval prompt in the answer: {text}"))
        .to_owned();
    api.ask(
        &key,
        going_on(&user("please run it"), &asked, &format!("approve {token}")),
    )
    .await;
    // Not to every local user: a key, or a signed-in browser's cookie.
    let anonymous = api.http.get(format!("{}/metrics", api.base)).send().await.unwrap();
    refusal(anonymous, StatusCode::UNAUTHORIZED).await;
    let cookie = api.sign_in().await;
    let browser = api
        .http
        .get(format!("{}/metrics", api.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(browser.status(), StatusCode::OK);
    let response = api
        .http
        .get(format!("{}/metrics", api.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        response.headers()
    );
    let text = response.text().await.unwrap();
    let mut samples = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let words: Vec<&str> = comment.split_whitespace().collect();
            assert!(matches!(words.first(), Some(&"HELP") | Some(&"TYPE")), "{line}");
            if words[0] == "TYPE" {
                assert!(["counter", "gauge", "histogram"].contains(&words[2]), "{line}");
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && name.starts_with("passepartout_"),
            "{line}"
        );
        if let Some(labels) = series.strip_prefix(name) {
            assert!(
                labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                "{line}"
            );
        }
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number: {line}"));
        samples.insert(series.to_owned(), value);
    }
    assert!(samples["passepartout_turns_total"] >= 1.0, "{text}");
    assert_eq!(samples["passepartout_api_answer_seconds_count"], 4.0, "{text}");
    assert_eq!(samples["passepartout_api_answer_seconds_bucket{le=\"+Inf\"}"], 4.0);
    // Every turn that answered was timed: the four asked, at least.
    let turns = samples["passepartout_turn_seconds_count"];
    assert!(turns >= 4.0, "{text}");
    assert_eq!(
        samples["passepartout_turn_seconds_bucket{le=\"+Inf\"}"], turns,
        "{text}"
    );
    assert!(samples["passepartout_turn_seconds_sum"] > 0.0, "{text}");
    let buckets: Vec<f64> = samples
        .iter()
        .filter(|(series, _)| series.starts_with("passepartout_turn_seconds_bucket{"))
        .map(|(_, value)| *value)
        .collect();
    assert!(buckets.len() > 2 && buckets.iter().all(|b| *b <= turns), "{text}");
    assert_eq!(
        samples["passepartout_approvals_decided_total{outcome=\"approved\"}"], 1.0,
        "{text}"
    );
    assert_eq!(samples["passepartout_approvals_decided_total{outcome=\"denied\"}"], 0.0);
    let server_errors: Vec<f64> = samples
        .iter()
        .filter(|(series, _)| {
            series.starts_with("passepartout_provider_failure_kinds_total{") && series.contains("kind=\"server_error\"")
        })
        .map(|(_, value)| *value)
        .collect();
    assert_eq!(server_errors, [1.0], "{text}");
    assert_eq!(
        samples["passepartout_gateway_restarts_total{gateway=\"web\"}"], 0.0,
        "{text}"
    );
    assert_eq!(samples["passepartout_gateway_up{gateway=\"web\"}"], 1.0);
    assert!(
        samples
            .keys()
            .any(|k| k.starts_with("passepartout_provider_calls_total{provider=")),
        "{text}"
    );
    assert!(!text.contains(&key));
    api.daemon.stop().await;
}

/// The value of `series` (`name{labels}`) in the `/metrics` text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(name, _)| *name == series)
        .and_then(|(_, value)| value.parse().ok())
}

#[tokio::test]
async fn a_gateway_restart_is_counted_in_metrics() {
    const TOKEN: &str = "123456:metrics-token";
    const RESTARTS: &str = "passepartout_gateway_restarts_total{gateway=\"telegram\"}";
    let telegram = FakeTelegram::start(TOKEN).await;
    let files = tempfile::tempdir().unwrap();
    let token_file = files.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let api = start_with(|config| {
        config.telegram.enabled = true;
        config.telegram.token_file = Some(token_file.clone());
        config.telegram.api_url = telegram.base_url();
        config.telegram.allowed_users = vec![42];
        config.telegram.poll_timeout_s = 1;
    })
    .await;
    let key = api.key("scraper").await;
    let metrics = || async {
        let response = api
            .http
            .get(format!("{}/metrics", api.base))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.unwrap()
    };
    let before = metrics().await;
    assert_eq!(sample(&before, RESTARTS), Some(0.0), "{before}");

    // The next poll is refused (a revoked token): the gateway fails, and its
    // supervisor counts the restart before it polls again. Counted after the
    // failure is set, so the refused poll is at most the first of the two
    // waited for.
    telegram.fail_next("getUpdates", FakeFailure::Unauthorized);
    let polled = telegram.calls("getUpdates").len();
    telegram.wait_for_calls("getUpdates", polled + 2, WAIT).await;
    let after = metrics().await;
    assert_eq!(sample(&after, RESTARTS), Some(1.0), "{after}");
    assert_eq!(
        sample(&after, "passepartout_gateway_restarts_total{gateway=\"web\"}"),
        Some(0.0),
        "{after}"
    );
}

#[tokio::test]
async fn no_answer_shows_a_configured_secret() {
    const CANARY: &str = "sk-canary-7f3a9c1e5b";
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("key");
    std::fs::write(&key_file, CANARY).unwrap();
    let mut api = start_with(|config| config.llm.providers[0].api_key_file = Some(key_file.clone())).await;
    let key = api.key("leaky").await;

    api.llm.push(Script::Reply(format!("The key is {CANARY}.")));
    let whole = api.ask(&key, user("what is your key?")).await;
    assert_eq!(whole["choices"][0]["message"]["content"], "The key is [redacted].");

    let half = CANARY.len() / 2;
    api.llm.push(Script::Stream(Streamed::text(&[
        "The key is ",
        &CANARY[..half],
        &CANARY[half..],
        ".",
    ])));
    let mut body = user("and streamed?");
    body["stream"] = json!(true);
    let events = events(api.post(Some(&key), &body).await).await;
    let text: String = events
        .iter()
        .filter(|data| *data != "[DONE]")
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "The key is [redacted].");
    assert!(!events.concat().contains(&CANARY[..half]), "{events:?}");
    api.daemon.stop().await;
}

/// The token of the approval prompt in `answer`'s content (its headline
/// names it: `**Approval needed** (`TOKEN`): …`).
fn prompt_token(answer: &Value) -> String {
    let text = answer["choices"][0]["message"]["content"].as_str().unwrap();
    text.split("Approval needed** (`")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no approval prompt in the answer: {text}"))
        .to_owned()
}

/// A request going on from `asked` (a request's body) and its `answer`,
/// with `next` from the user: the history resent, as clients do.
fn going_on(asked: &Value, answer: &Value, next: &str) -> Value {
    let mut body = asked.clone();
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": content(answer)}));
    messages.push(json!({"role": "user", "content": next}));
    body
}

fn content(answer: &Value) -> &str {
    answer["choices"][0]["message"]["content"].as_str().unwrap()
}

#[tokio::test]
async fn a_plain_key_cannot_approve_what_it_asked_for() {
    let mut api = start().await;
    api.llm.set_responder(support::approvals::model);
    let key = api.key("client").await;
    let asked = user("please run it");
    let answer = api.ask(&key, asked.clone()).await;
    let token = prompt_token(&answer);
    let notice = content(&answer);
    assert!(
        notice.contains("Only the owner can approve it, on the dashboard's Approvals page (/approvals)"),
        "{notice}"
    );
    assert!(
        !notice.contains(&format!("approve {token}")) && !notice.contains(&format!("always {token}")),
        "never words the key cannot act on: {notice}"
    );

    let refused = api
        .ask(&key, going_on(&asked, &answer, &format!("approve {token}")))
        .await;
    let said = content(&refused);
    assert!(said.contains("not allowed to approve"), "{said}");
    assert!(
        said.contains("Approvals page") && said.contains("--approver"),
        "says who may: {said}"
    );
    let pending = api.cli(&["approvals"]).await;
    assert!(pending.contains(&token), "still waiting: {pending}");
    assert!(
        !api.llm
            .requests()
            .iter()
            .any(|r| last_user_text(r).starts_with(support::approvals::OUTCOME)),
        "nothing ran"
    );
    api.daemon.stop().await;
}

#[tokio::test]
async fn an_approver_key_approves_in_its_own_conversation_only() {
    let mut api = start().await;
    api.llm.set_responder(support::approvals::model);
    let ops = api.approver_key("ops").await;
    let listed = api.cli(&["web", "keys"]).await;
    assert!(
        listed.lines().any(|l| l.ends_with("ops") && l.contains(" yes ")),
        "{listed}"
    );
    let client = api.key("client").await;

    // Another key's approval is not the approver key's to answer, nor
    // does it learn that it exists.
    let theirs = prompt_token(&api.ask(&client, user("please run it")).await);
    let elsewhere = api.ask(&ops, user(&format!("approve {theirs}"))).await;
    assert!(
        content(&elsewhere).starts_with("No approval has the token"),
        "{}",
        content(&elsewhere)
    );

    let asked = user("please run it");
    let answer = api.ask(&ops, asked.clone()).await;
    assert!(
        content(&answer).contains("Send `approve "),
        "an approver key sees the prompt itself"
    );
    let token = prompt_token(&answer);
    let approved = api
        .ask(&ops, going_on(&asked, &answer, &format!("approve {token}")))
        .await;
    assert_eq!(approved["object"], "chat.completion");
    let told = tokio::time::timeout(WAIT, async {
        loop {
            let requests = api.llm.wait_for_requests(api.llm.requests().len() + 1, WAIT).await;
            if requests
                .iter()
                .any(|r| last_user_text(r).starts_with(support::approvals::OUTCOME))
            {
                return;
            }
        }
    })
    .await;
    assert!(
        told.is_ok(),
        "the approved command ran and the model was told: {:#?}",
        api.llm.requests()
    );
    let pending = api.cli(&["approvals"]).await;
    assert!(pending.contains(&theirs), "the other key's still waits: {pending}");
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_plain_key_sees_its_own_usage_and_not_the_daemons_state() {
    let mut api = start().await;
    let plain = api.key("plain").await;
    let approver = api.approver_key("approver").await;
    let said = |answer: Value| answer["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    for command in ["/status", "/loops"] {
        let refused = said(api.ask(&plain, user(command)).await);
        assert!(
            refused.contains("shown only to someone who may approve here"),
            "{command}: {refused}"
        );
        assert!(
            !refused.contains("heartbeat") && !refused.contains("gateway"),
            "{refused}"
        );
    }
    let usage = said(api.ask(&plain, user("/usage")).await);
    assert!(usage.contains("This conversation today"), "{usage}");
    assert!(!usage.contains("In total"), "no daemon-wide totals: {usage}");

    let status = said(api.ask(&approver, user("/status")).await);
    assert!(!status.contains("shown only to"), "an approver sees it: {status}");
    let usage = said(api.ask(&approver, user("/usage")).await);
    assert!(usage.contains("In total today"), "{usage}");
    assert!(api.llm.requests().is_empty(), "commands never reach the model");
    api.daemon.stop().await;
}

#[tokio::test]
async fn link_and_pair_through_the_api_are_answered_at_once() {
    let mut api = start().await;
    let key = api.key("plain").await;
    let said = |answer: Value| answer["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    let link = said(api.ask(&key, user("/link")).await);
    assert!(link.contains("/link "), "a code to say on the other channel: {link}");
    let pair = said(api.ask(&key, user("/pair approve ABCD1234")).await);
    assert!(pair.contains("only an approver may let someone in"), "{pair}");
    assert!(api.llm.requests().is_empty(), "answered by the daemon, not the model");
    api.daemon.stop().await;
}

#[tokio::test]
async fn open_metrics_serves_them_without_a_key() {
    let mut api = start_with(|config| config.web.open_metrics = true).await;
    let response = api.http.get(format!("{}/metrics", api.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.text().await.unwrap().contains("passepartout_turns_total"));
    api.daemon.stop().await;
}

#[tokio::test]
async fn metrics_need_a_key_behind_a_public_address() {
    // The public address is what the daemon tells of; the test reaches the
    // listener directly, at a port it holds: bound (with SO_REUSEADDR, as
    // the daemon's listener is) but never listening, so the daemon may
    // listen there while the system gives the port to no other test.
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.set_reuseaddr(true).unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = held.local_addr().unwrap().port();
    let mut api = start_with(|config| {
        config.web.listen = format!("127.0.0.1:{port}").parse().unwrap();
        config.web.public_url = Some("https://assistant.example".into());
    })
    .await;
    assert_eq!(api.base, "https://assistant.example");
    let key = api.key("scraper").await;
    let url = format!("http://127.0.0.1:{port}/metrics");
    let refused = api.http.get(&url).send().await.unwrap();
    refusal(refused, StatusCode::UNAUTHORIZED).await;
    let scraped = api.http.get(&url).bearer_auth(&key).send().await.unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    assert!(scraped.text().await.unwrap().contains("passepartout_turns_total"));
    api.daemon.stop().await;
}

/// The Python snippet's `client`, for `key`, with `ask(messages)` (a whole
/// answer's content) and `stream(messages)` (a streamed one's text) at
/// hand.
fn python(api: &Api, key: &str, code: &str) -> String {
    let helpers = "def ask(messages):\n    r = client.chat.completions.create(model='passepartout', messages=messages)\n    return r.choices[0].message.content\n\
                   def stream(messages):\n    s = client.chat.completions.create(model='passepartout', messages=messages, stream=True)\n    return ''.join(c.delta.content or '' for ch in s for c in ch.choices)\n\
                   def said(messages):\n    messages.append({'role': 'assistant', 'content': ask(messages)})\n    return messages\n";
    support::python::with_client(&format!("{}/v1", api.base), key, &format!("{helpers}{code}"))
}

/// The prompt the model was given when last asked to answer `text`.
fn prompt_for(api: &Api, text: &str) -> String {
    let requests = api.llm.requests();
    let prompt = requests
        .iter()
        .rev()
        .find(|r| last_user_text(r) == text)
        .unwrap_or_else(|| panic!("the model was never asked {text:?}"));
    prompt["messages"].to_string()
}

/// The dashboard's listing of conversations, and each conversation of the
/// key called `name`'s page, as a signed-in browser reads them.
async fn dashboard(api: &Api, name: &str) -> (String, Vec<String>) {
    let cookie = api.sign_in().await;
    let get = |path: String| {
        let request = api.http.get(format!("{}{path}", api.base)).header("cookie", &cookie);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let listing = get("/conversations".into()).await;
    let shown = format!(">web:API key {name}/");
    let mut pages = Vec::new();
    for (at, _) in listing.match_indices(&shown) {
        let link = listing[..at]
            .rsplit("href=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        pages.push(get(link.to_owned()).await);
    }
    (listing, pages)
}

#[tokio::test]
async fn two_fresh_chats_stay_apart_and_a_resent_history_continues_its_own_once() {
    let mut api = start().await;
    let key = api.key("py").await;
    let snippet = python(
        &api,
        &key,
        "a = said([{'role': 'user', 'content': 'alpha one'}])\n\
         b = said([{'role': 'user', 'content': 'beta one'}])\n\
         a = said(a + [{'role': 'user', 'content': 'alpha two'}])\n\
         b = said(b + [{'role': 'user', 'content': 'beta two'}])\n\
         a = said(a + [{'role': 'user', 'content': 'alpha three'}])\n\
         print(json.dumps({'a': a[-1]['content'], 'b': b[-1]['content']}))",
    );
    let said = support::python::run_json(&snippet).await;
    assert_eq!(said, json!({"a": "echo: alpha three", "b": "echo: beta two"}));

    let alpha = prompt_for(&api, "alpha three");
    for earlier in ["alpha one", "alpha two"] {
        assert_eq!(alpha.matches(earlier).count(), 2, "asked once, answered once: {alpha}");
    }
    assert!(!alpha.contains("beta"), "the other chat never mixes in: {alpha}");
    let beta = prompt_for(&api, "beta two");
    assert!(
        !beta.contains("alpha") && beta.matches("beta one").count() == 2,
        "{beta}"
    );
    assert!(
        !prompt_for(&api, "beta one").contains("alpha one"),
        "a fresh chat starts fresh"
    );

    // The history kept: two conversations, named by the key, each message once.
    let (listing, pages) = dashboard(&api, "py").await;
    assert_eq!(pages.len(), 2, "{listing}");
    let a = pages
        .iter()
        .find(|page| page.contains("alpha one"))
        .expect("alpha's page");
    for text in ["alpha one", "alpha two", "alpha three"] {
        assert_eq!(a.matches(&format!("echo: {text}")).count(), 1, "{text} kept once: {a}");
    }
    assert!(!a.contains("beta"), "{a}");
    assert!(
        !listing.contains("key-"),
        "shown by the key's name, not its id: {listing}"
    );
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_regenerated_answer_and_an_edited_message_branch_off_and_never_mix() {
    let mut api = start().await;
    let key = api.key("py").await;
    let snippet = python(
        &api,
        &key,
        "first = said([{'role': 'user', 'content': 'q one'}])\n\
         second = said(first + [{'role': 'user', 'content': 'q two'}])\n\
         again = ask(first + [{'role': 'user', 'content': 'q two'}])\n\
         edited = ask([{'role': 'user', 'content': 'q one, edited'}, first[1], {'role': 'user', 'content': 'q two'}])\n\
         third = ask(second + [{'role': 'user', 'content': 'q three'}])\n\
         print(json.dumps([again, edited, third]))",
    );
    let said = support::python::run_json(&snippet).await;
    assert_eq!(said, json!(["echo: q two", "echo: q two", "echo: q three"]));

    let third = prompt_for(&api, "q three");
    assert_eq!(
        third.matches("q two").count(),
        2,
        "the regenerated one stayed out: {third}"
    );
    assert!(!third.contains("edited"), "{third}");
    let requests = api.llm.requests();
    let regenerated = requests
        .iter()
        .filter(|r| last_user_text(r) == "q two")
        .map(|r| r["messages"].to_string())
        .collect::<Vec<_>>();
    assert_eq!(regenerated.len(), 3, "{regenerated:#?}");
    for prompt in &regenerated[1..] {
        assert!(
            !prompt.contains("echo: q two"),
            "a branch never sees the answer it replaces: {prompt}"
        );
    }
    assert!(regenerated[2].contains("q one, edited") && !regenerated[2].contains("\"q one\""));

    let (listing, pages) = dashboard(&api, "py").await;
    assert_eq!(
        pages.len(),
        3,
        "the conversation, the regenerated branch, the edited one: {listing}"
    );
    api.daemon.stop().await;
}

#[tokio::test]
async fn the_clients_system_prompt_reaches_the_model_after_the_assistants_own() {
    let mut api = start().await;
    let key = api.key("py").await;
    let snippet = python(
        &api,
        &key,
        "print(json.dumps(ask([{'role': 'system', 'content': 'Answer like a pirate.'}, {'role': 'user', 'content': 'ahoy'}])))",
    );
    assert_eq!(support::python::run_json(&snippet).await, "echo: ahoy");
    let requests = api.llm.requests();
    let prompt = requests.iter().rev().find(|r| last_user_text(r) == "ahoy").unwrap();
    let system = prompt["messages"][0]["content"].as_str().unwrap();
    assert_eq!(prompt["messages"][0]["role"], "system");
    let own = passepartout::config::Config::default().pipeline.system_prompt;
    let at = system
        .find("<client-instructions>\nAnswer like a pirate.\n</client-instructions>")
        .unwrap_or_else(|| panic!("the client's instructions, marked: {system}"));
    assert!(
        system.starts_with(own.trim()) && at > own.trim().len(),
        "after the assistant's own: {system}"
    );
    assert!(
        system.contains("The client this conversation comes through"),
        "{system}"
    );
    assert_eq!(
        prompt["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "system")
            .count(),
        1
    );
    api.daemon.stop().await;
}

/// The token of the one approval waiting, once one does: asked of the
/// daemon, as `passepartout approvals` asks, until it is there.
async fn waiting_token(api: &Api) -> String {
    let mut client = api.daemon.client("test").await;
    tokio::time::timeout(WAIT, async {
        loop {
            let listing = client
                .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
                .await
                .expect("approvals");
            if let Some(token) = listing["approvals"][0]["token"].as_str() {
                return token.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("an approval waits")
}

#[tokio::test]
async fn a_streamed_request_waits_for_the_owners_decision_and_ends_in_its_outcome() {
    let mut api = start().await;
    api.llm.set_responder(support::approvals::model);
    let key = api.key("py").await;
    let snippet = python(
        &api,
        &key,
        "print(json.dumps(stream([{'role': 'user', 'content': 'please run it'}])))",
    );
    let (streamed, ()) = tokio::join!(support::python::run_json(&snippet), async {
        let token = waiting_token(&api).await;
        api.cli(&["approvals", "approve", &token]).await;
    });
    let text = streamed.as_str().unwrap();
    assert!(text.contains("Only the owner can approve it"), "{text}");
    assert!(
        text.contains("(/approvals)") && !text.contains("Send `approve"),
        "{text}"
    );
    assert!(
        text.contains("Waiting for the owner's decision, up to 10 minutes"),
        "{text}"
    );
    let outcome = text.split("Waiting for the owner's decision").nth(1).unwrap();
    assert!(
        outcome.contains(&format!("final: {}", support::approvals::OUTCOME)),
        "the outcome streamed after the wait: {text}"
    );
    api.daemon.stop().await;
}

#[tokio::test]
async fn a_whole_answer_ends_with_the_notice_and_the_next_request_begins_with_the_outcome() {
    let mut api = start().await;
    api.llm.set_responder(support::approvals::model);
    let key = api.key("client").await;
    let asked = user("please run it");
    let answer = api.ask(&key, asked.clone()).await;
    assert!(
        content(&answer).contains("Only the owner can approve it"),
        "{}",
        content(&answer)
    );
    assert!(
        content(&answer).contains("its answer begins with the outcome"),
        "{}",
        content(&answer)
    );
    let token = prompt_token(&answer);
    let before = api.llm.requests().len();
    api.cli(&["approvals", "approve", &token]).await;
    let told = api.llm.wait_for_requests(before + 1, WAIT).await;
    assert!(last_user_text(told.last().unwrap()).starts_with(support::approvals::OUTCOME));

    // The outcome's turn runs before the next request's, in the
    // conversation's order: the answer opens with it.
    let later = api.ask(&key, going_on(&asked, &answer, "and now?")).await;
    let said = content(&later);
    let outcome_at = said.find("final: ").unwrap();
    let echo_at = said.find("echo: and now?").unwrap();
    assert!(outcome_at < echo_at, "the outcome first, then the answer: {said}");
    let prompt = prompt_for(&api, "and now?");
    assert_eq!(
        prompt.matches("please run it").count(),
        1,
        "nothing stored twice: {prompt}"
    );
    api.daemon.stop().await;
}

#[tokio::test]
async fn keys_create_prints_the_base_url_the_model_and_a_curl_line_that_works() {
    let mut api = start().await;
    let shown = api.cli(&["web", "keys", "create", "curl"]).await;
    let key = shown.lines().next().unwrap();
    assert!(shown.contains(&format!("Base URL: {}/v1\n", api.base)), "{shown}");
    assert!(shown.contains("Model:    passepartout\n"), "{shown}");
    let curl = shown
        .lines()
        .find(|line| line.trim_start().starts_with("curl "))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(curl.contains(key), "{curl}");
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{} --silent --show-error --max-time 30", curl.trim()))
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(content(&answer), "echo: Hello");
    api.daemon.stop().await;
}
