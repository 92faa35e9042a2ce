//! No page or API answer of the dashboard shows a configured secret, wherever
//! the configuration holds it: a provider's `base_url` credentials, a
//! provider's proxy credentials, an MCP server's `env` value, its arguments
//! (`-e GITHUB_TOKEN=…`, `--header "Authorization: Bearer …"`), its URL's
//! `?api_key=…`, a `web.public_url` with credentials, and the Telegram token
//! file — whose content a tool's output echoes into the history, and the
//! model quotes. A real daemon, signed in with a link the socket hands out,
//! an API key made on the socket; every route is read and none holds a
//! canary: the pages, the web chat's page, the reply streamed to a message
//! sent there and the chat's stream of what is said, the pages' live
//! updates (`/events`) and the API. The status document (`passepartout
//! status`) holds none either.
//! A secret a reload adds is kept out from the reload on.

use std::path::Path;

use passepartout::Extensions;
use passepartout::config::{Config, McpServerConfig, ProviderConfig};
use passepartout_admin::WebRequest;
use reqwest::StatusCode;
use reqwest::header;
use serde_json::json;

use crate::support;
use support::fake_llm::{FakeLlm, Script};
use support::harness::{TestDaemon, WAIT, ask};
use support::tools::Record;
use support::web::no_redirects as http;

/// Every canary holds this; no response may.
const CANARY: &str = "canary";
const TELEGRAM: &str = "canary-tg-0a1b2c3d";
const ENV: &str = "canary-env-4e5f6a7b";
const GITHUB: &str = "canary-gh-8c9d0e1f";
const BEARER: &str = "Bearer canary-hdr-2a3b4c5d";
const QUERY: &str = "canary-q-6e7f8a9b";
const PROXY: &str = "puser:canary-px%2D1c2d3e4f";
/// The proxy's password alone, and as it reads percent-decoded.
const PROXY_PASSWORDS: [&str; 2] = ["canary-px%2D1c2d3e4f", "canary-px-1c2d3e4f"];
/// The base URL's password alone.
const BASE_PASSWORD: &str = "canary-bu-5a6b7c8d";
const BASE: &str = "buser:canary-bu-5a6b7c8d";
const PUBLIC: &str = "wuser:canary-pu-9f8e7d6c";

/// The path of the socket conversation `me`'s page: `socket:me` in base64url.
const ME: &str = "/conversations/c29ja2V0Om1l";

/// A text quoting every secret the daemon runs with.
fn quoting_all() -> String {
    let [proxy_password, proxy_decoded] = PROXY_PASSWORDS;
    format!(
        "The zebra says {TELEGRAM} {ENV} {GITHUB} {BEARER} {QUERY} {PROXY} {BASE}, \
         {proxy_password} {proxy_decoded} {BASE_PASSWORD}."
    )
}

/// `llm`'s base URL with credentials in it.
fn with_credentials(llm: &FakeLlm) -> String {
    llm.base_url().replacen("://", &format!("://{BASE}@"), 1)
}

fn secret_laden(config: &mut Config, llm: &FakeLlm, token_file: &Path) {
    config.web.enabled = true;
    config.web.listen = "127.0.0.1:0".parse().unwrap();
    config.telegram.token_file = Some(token_file.to_path_buf());
    config.llm.providers[0].base_url = with_credentials(llm);
    config.llm.providers.push(ProviderConfig {
        name: "spare".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        proxy: Some(format!("http://{PROXY}@127.0.0.1:9")),
        ..config.llm.providers[0].clone()
    });
    config.mcp.servers.push(McpServerConfig {
        name: "gh".into(),
        command: Some("true".into()),
        args: [
            "-e",
            &format!("GITHUB_TOKEN={GITHUB}"),
            "--header",
            &format!("Authorization: {BEARER}"),
        ]
        .map(String::from)
        .to_vec(),
        env: [("NOTES_TOKEN".to_owned(), ENV.to_owned())].into(),
        enabled: false,
        ..McpServerConfig::default()
    });
    config.mcp.servers.push(McpServerConfig {
        name: "remote".into(),
        url: Some(format!("https://mcp.x/sse?api_key={QUERY}&v=1")),
        enabled: false,
        ..McpServerConfig::default()
    });
}

/// The same settings as a file, for the Configuration page and a reload.
fn file_text(config: &Config, llm: &FakeLlm, token_file: &Path) -> String {
    format!(
        "data_dir = {data:?}\n\n[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n\
         public_url = \"https://{PUBLIC}@a.example\"\n\n\
         [telegram]\ntoken_file = {token:?}\n\n\
         [[llm.providers]]\nname = \"fake\"\nbase_url = {url:?}\nmodel = \"fake-model\"\n\n\
         [[llm.providers]]\nname = \"spare\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"fake-model\"\n\
         proxy = \"http://{PROXY}@127.0.0.1:9\"\n\n\
         [[mcp.servers]]\nname = \"gh\"\ncommand = \"true\"\nenabled = false\n\
         args = [\"-e\", \"GITHUB_TOKEN={GITHUB}\", \"--header\", \"Authorization: {BEARER}\"]\n\
         env = {{ NOTES_TOKEN = \"{ENV}\" }}\n\n\
         [[mcp.servers]]\nname = \"remote\"\nurl = \"https://mcp.x/sse?api_key={QUERY}&v=1\"\nenabled = false\n",
        data = config.data_dir.display().to_string(),
        token = token_file.display().to_string(),
        url = with_credentials(llm),
    )
}

/// `response`'s status and body, which must hold no canary.
async fn clean(what: &str, response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(!body.contains(CANARY), "a canary shows in {what}:\n{body}");
    (status, body)
}

#[tokio::test]
async fn no_page_or_api_answer_shows_a_configured_secret() {
    let llm = FakeLlm::start().await;
    let files = tempfile::tempdir().unwrap();
    let token_file = files.path().join("telegram.token");
    std::fs::write(&token_file, TELEGRAM).unwrap();
    let config_file = files.path().join("config.toml");
    let extensions = Extensions {
        config_file: Some(config_file.clone()),
        tools: vec![std::sync::Arc::new(Record::default())],
        ..Extensions::default()
    };
    let daemon = TestDaemon::start_extended(&llm, |config| secret_laden(config, &llm, &token_file), extensions).await;
    std::fs::write(&config_file, file_text(&daemon.config, &llm, &token_file)).unwrap();

    // A tool's output echoes the token file into the history; the model
    // quotes every secret.
    llm.push(Script::ToolCall {
        name: "record".into(),
        arguments: json!({ "what": TELEGRAM }).to_string(),
    });
    llm.push(Script::Reply(quoting_all()));
    let mut client = daemon.client("me").await;
    let (_, reply) = ask(&mut client, "What does the zebra say?").await;
    assert!(reply.contains("zebra"), "{reply}");

    let link = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let created = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::CreateKey {
                name: "probe".into(),
                approver: false,
            },
        })
        .await
        .unwrap()
        .message;
    let key = created
        .split_whitespace()
        .find(|word| word.starts_with("pp-"))
        .unwrap_or_else(|| panic!("a key in: {created}"))
        .to_owned();
    let response = http().get(&link).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();

    let mut config_page = String::new();
    for path in [
        "/",
        "/conversations",
        ME,
        "/conversations?q=zebra",
        "/conversations?q=recorded",
        "/usage",
        "/config",
        "/approvals",
        "/loops",
        "/logs",
        "/keys",
        "/channels",
    ] {
        let response = http()
            .get(format!("{base}{path}"))
            .header(header::COOKIE, &cookie)
            .send()
            .await
            .unwrap();
        let (status, body) = clean(path, response).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        if path == ME {
            assert!(body.contains("zebra says"), "the history is shown: {body}");
        }
        if path == "/config" {
            config_page = body;
        }
    }
    let at = config_page.find(r#"name="csrf" value=""#).expect("a CSRF field") + r#"name="csrf" value=""#.len();
    let csrf = config_page[at..].split('"').next().unwrap().to_owned();
    let response = http()
        .post(format!("{base}/config/reload"))
        .header(header::COOKIE, &cookie)
        .header(header::ORIGIN, &base)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    let (status, reloaded) = clean("the reload's answer", response).await;
    assert_eq!(status, StatusCode::OK, "{reloaded}");
    assert!(reloaded.contains(r#"<section class="result""#), "{reloaded}");

    llm.push(Script::Reply(quoting_all()));
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&json!({ "model": "passepartout", "messages": [{ "role": "user", "content": "again?" }] }))
        .send()
        .await
        .unwrap();
    let (status, answer) = clean("/v1/chat/completions", response).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("zebra says"), "{answer}");
    let response = http()
        .get(format!("{base}/v1/models"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    clean("/v1/models", response).await;
    let response = http()
        .get(format!("{base}/metrics"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let (status, _) = clean("/metrics", response).await;
    assert_eq!(status, StatusCode::OK);

    web_chat(&base, &cookie, &llm).await;

    let status = daemon.daemon.as_ref().unwrap().status().to_string();
    assert!(!status.contains(CANARY), "the status document: {status}");
    drop(llm);
}

/// The value of the hidden field `name` in `page`.
fn field(page: &str, name: &str) -> String {
    let marker = format!(r#"name="{name}" value=""#);
    let at = page.find(&marker).unwrap_or_else(|| panic!("no field {name}")) + marker.len();
    page[at..].split('"').next().unwrap().to_owned()
}

/// What an event stream sent, up to and with the first event `until`; none
/// of it may hold a canary.
async fn events_until(what: &str, mut response: reqwest::Response, until: &str) -> String {
    assert_eq!(response.status(), StatusCode::OK, "{what}");
    let mut body = String::new();
    while !body.contains(&format!("event: {until}\n")) {
        let chunk = tokio::time::timeout(WAIT, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("{what} sent no {until} in time: {body}"))
            .unwrap()
            .unwrap_or_else(|| panic!("{what} ended before {until}: {body}"));
        body.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(!body.contains(CANARY), "a canary shows in {what}:\n{body}");
    body
}

/// The web chat, signed in as `cookie` on `base`: a message sent there is
/// answered with every secret quoted; neither the reply streamed to it, the
/// chat's stream of what is said, the chat's page, nor the pages' live
/// updates show one.
async fn web_chat(base: &str, cookie: &str, llm: &FakeLlm) {
    let get = |path: &str| {
        http()
            .get(format!("{base}{path}"))
            .header(header::COOKIE, cookie)
            .send()
    };
    let opened = get("/chat").await.unwrap();
    let chat = opened.headers()[header::LOCATION].to_str().unwrap().to_owned();
    let said = get(&format!("{chat}/stream")).await.unwrap();
    let (status, page) = clean("/chat", get(&chat).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    llm.push(Script::Reply(quoting_all()));
    let form = reqwest::multipart::Form::new()
        .text("csrf", field(&page, "csrf"))
        .text("id", field(&page, "id"))
        // A secret in its first line, which names the chat in the list.
        .text("text", format!("{ENV} What does the zebra say on the web?"));
    let reply = http()
        .post(format!("{base}{chat}"))
        .header(header::COOKIE, cookie)
        .header(header::ORIGIN, base)
        .header(header::ACCEPT, "text/event-stream")
        .multipart(form)
        .send()
        .await
        .unwrap();
    let streamed = events_until("the reply's stream", reply, "end").await;
    assert!(streamed.contains("zebra says"), "{streamed}");
    let heard = events_until("/chat/stream", said, "end").await;
    assert!(heard.contains("zebra says"), "{heard}");
    let (status, page) = clean("/chat after the reply", get(&chat).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("zebra says"), "the chat is shown: {page}");
    // A stream that saw something else before has news at once.
    events_until("/events", get("/events?seen=stale").await.unwrap(), "status").await;
}

/// Signs in with a link the socket hands out: the dashboard's address and
/// the session's cookie.
async fn signed_in(client: &mut passepartout_socket::Client) -> (String, String) {
    let link = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let response = http().get(&link).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    (base, cookie.split(';').next().unwrap().to_owned())
}

#[tokio::test]
async fn a_secret_a_reload_adds_is_kept_out_of_answers_and_pages() {
    const ADDED: &str = "canary-added-3c4d5e6f";
    let llm = FakeLlm::start().await;
    let files = tempfile::tempdir().unwrap();
    let config_file = files.path().join("config.toml");
    let extensions = Extensions {
        config_file: Some(config_file.clone()),
        ..Extensions::default()
    };
    let web_on = |config: &mut Config| {
        config.web.enabled = true;
        config.web.listen = "127.0.0.1:0".parse().unwrap();
    };
    let daemon = TestDaemon::start_extended(&llm, web_on, extensions).await;
    // The same daemon's file, with a tool server whose `env` holds a new
    // secret (waiting for a restart to run, but named from now on).
    std::fs::write(
        &config_file,
        format!(
            "data_dir = {data:?}\n\n[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n\n\
             [[llm.providers]]\nname = \"fake\"\nbase_url = {url:?}\nmodel = \"fake-model\"\n\n\
             [[mcp.servers]]\nname = \"notes\"\ncommand = \"true\"\nenabled = false\n\
             env = {{ NOTES_TOKEN = \"{ADDED}\" }}\n",
            data = daemon.config.data_dir.display().to_string(),
            url = llm.base_url(),
        ),
    )
    .unwrap();
    let mut client = daemon.client("me").await;
    let reloaded = client
        .ask::<passepartout_socket::Reloaded>(passepartout_socket::AdminRequest::Reload)
        .await
        .unwrap();
    assert!(reloaded.applied, "{reloaded:?}");
    assert!(
        reloaded.need_restart.iter().any(|path| path == "mcp.servers"),
        "{reloaded:?}"
    );

    llm.push(Script::Reply(format!("The zebra says {ADDED}.")));
    let (_, reply) = ask(&mut client, "What does the zebra say?").await;
    assert!(reply.contains("zebra"), "{reply}");
    let (base, cookie) = signed_in(&mut client).await;
    let response = http()
        .get(format!("{base}{ME}"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let (status, page) = clean("the conversation's page", response).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("zebra says [redacted]"), "{page}");

    let created = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::CreateKey {
                name: "probe".into(),
                approver: false,
            },
        })
        .await
        .unwrap()
        .message;
    let key = created
        .split_whitespace()
        .find(|word| word.starts_with("pp-"))
        .unwrap_or_else(|| panic!("a key in: {created}"))
        .to_owned();
    llm.push(Script::Reply(format!("The zebra says {ADDED}.")));
    let response = http()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&json!({ "model": "passepartout", "messages": [{ "role": "user", "content": "again?" }] }))
        .send()
        .await
        .unwrap();
    let (status, answer) = clean("/v1/chat/completions", response).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("zebra says [redacted]"), "{answer}");
    drop(llm);
}
