//! Tests for `web_search` against fake SearXNG, Brave and Tavily servers on
//! 127.0.0.1:0 speaking each API's wire format, which record what they are
//! sent; and against backends that fail.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::*;
use crate::config::SearchBackend;
use crate::safety::tools::testing;

/// What a fake server was sent.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
}

/// A server on 127.0.0.1:0 answering every request with `answer`.
struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    async fn start(answer: fn(&Seen) -> Response) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let request = Seen {
                method,
                path: uri.path().to_owned(),
                query: uri.query().unwrap_or_default().to_owned(),
                headers,
                body,
            };
            let response = answer(&request);
            recorded.lock().unwrap().push(request);
            async move { response }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn section(backend: SearchBackend, base_url: &str) -> WebSearchConfig {
    WebSearchConfig {
        backend: Some(backend),
        base_url: Some(base_url.to_owned()),
        timeout_s: 5,
        ..WebSearchConfig::default()
    }
}

/// `section` with its key in a file, as a systemd credential would be.
fn with_key(section: WebSearchConfig, key: &str) -> (WebSearchConfig, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, format!("{key}\n")).unwrap();
    let section = WebSearchConfig {
        api_key_file: Some(path),
        ..section
    };
    (section, dir)
}

async fn search(section: &WebSearchConfig, arguments: serde_json::Value) -> Result<String, ToolError> {
    let tool = WebSearch::new(section).unwrap().expect("a backend is configured");
    tool.call(&testing::context(), arguments).await
}

#[track_caller]
fn failure(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn searxng_answer(seen: &Seen) -> Response {
    if seen.path != "/searx/search" || !seen.query.contains("format=json") {
        return StatusCode::NOT_FOUND.into_response();
    }
    axum::Json(json!({
        "query": "rust readability",
        "number_of_results": 3,
        "results": [
            {"url": "https://one.example/", "title": "First result", "content": "The first\n snippet.", "engine": "ddg"},
            {"url": "https://two.example/page", "title": "Second result", "engine": "brave"},
            {"url": "https://three.example/", "title": "Third result", "content": "Third snippet."}
        ],
        "answers": [], "suggestions": [], "unresponsive_engines": []
    }))
    .into_response()
}

#[tokio::test]
async fn searxng_results_come_back_numbered_with_title_url_and_snippet() {
    let fake = Fake::start(searxng_answer).await;
    let base = format!("{}searx", fake.base);
    let output = search(
        &section(SearchBackend::Searxng, &base),
        json!({"query": "rust readability", "count": 2}),
    )
    .await
    .unwrap();
    assert_eq!(
        output,
        format!(
            "2 results for \"rust readability\" from searxng at {base}:\n\n\
             1. First result\n   https://one.example/\n   The first snippet.\n\n\
             2. Second result\n   https://two.example/page\n"
        )
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::GET);
    assert_eq!(seen[0].query, "q=rust+readability&format=json");
}

#[tokio::test]
async fn brave_is_asked_with_its_key_and_its_html_snippets_become_text() {
    fn answer(seen: &Seen) -> Response {
        if seen.headers.get("x-subscription-token").map(|v| v.as_bytes()) != Some(b"brave-secret") {
            return (StatusCode::UNAUTHORIZED, "{\"type\":\"ErrorResponse\"}").into_response();
        }
        axum::Json(json!({
            "type": "search",
            "query": {"original": "tea"},
            "web": {"type": "search", "results": [
                {"title": "All about <strong>tea</strong>", "url": "https://tea.example/", "description": "Green &amp; black <strong>tea</strong>.", "age": "1 day"}
            ]}
        }))
        .into_response()
    }
    let fake = Fake::start(answer).await;
    let (config, _dir) = with_key(
        section(SearchBackend::Brave, &format!("{}res/v1", fake.base)),
        "brave-secret",
    );
    let output = search(&config, json!({"query": "tea"})).await.unwrap();
    assert_eq!(
        output,
        "1 result for \"tea\" from brave:\n\n1. All about tea\n   https://tea.example/\n   Green & black tea.\n"
    );
    let seen = fake.seen();
    assert_eq!(seen[0].path, "/res/v1/web/search");
    assert_eq!(
        seen[0].query,
        format!("q=tea&count={}", crate::config::DEFAULT_SEARCH_COUNT)
    );

    let (wrong, _dir) = with_key(
        section(SearchBackend::Brave, &format!("{}res/v1", fake.base)),
        "wrong-secret",
    );
    let message = failure(search(&wrong, json!({"query": "tea"})).await);
    assert!(
        message.starts_with("web search through brave failed: it answered HTTP 401 (is the API key right?)"),
        "{message}"
    );
    assert!(!message.contains("wrong-secret"), "{message}");
}

#[tokio::test]
async fn tavily_is_posted_the_query_with_a_bearer_key() {
    fn answer(seen: &Seen) -> Response {
        let authorized = seen.headers.get("authorization").map(|v| v.as_bytes()) == Some(b"Bearer tvly-secret");
        if seen.method != Method::POST || seen.path != "/search" || !authorized {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        axum::Json(json!({
            "query": "weather oslo",
            "answer": null,
            "results": [
                {"title": "Oslo weather", "url": "https://weather.example/oslo", "content": "Snow tomorrow.", "score": 0.9, "raw_content": null},
                {"title": "", "url": "https://other.example/", "content": "", "score": 0.1}
            ],
            "response_time": 0.5
        }))
        .into_response()
    }
    let fake = Fake::start(answer).await;
    let (config, _dir) = with_key(section(SearchBackend::Tavily, &fake.base), "tvly-secret");
    let output = search(&config, json!({"query": "weather oslo", "count": 3}))
        .await
        .unwrap();
    assert_eq!(
        output,
        "2 results for \"weather oslo\" from tavily:\n\n1. Oslo weather\n   https://weather.example/oslo\n   Snow tomorrow.\n\n\
         2. (no title)\n   https://other.example/\n"
    );
    let body: serde_json::Value = serde_json::from_slice(&fake.seen()[0].body).unwrap();
    assert_eq!(body, json!({"query": "weather oslo", "max_results": 3}));
}

#[tokio::test]
async fn a_failing_backend_is_named_with_what_went_wrong() {
    fn broken(seen: &Seen) -> Response {
        match seen.path.as_str() {
            "/error/search" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
            "/forbidden/search" => (StatusCode::FORBIDDEN, "Forbidden").into_response(),
            _ => ([("content-type", "application/json")], "{\"results\": [ {\"url\": ").into_response(),
        }
    }
    let fake = Fake::start(broken).await;
    let query = json!({"query": "anything"});
    let at = |path: &str| format!("{}{path}", fake.base);

    let message = failure(search(&section(SearchBackend::Searxng, &at("error")), query.clone()).await);
    assert_eq!(
        message,
        format!(
            "web search through searxng at {} failed: it answered HTTP 500: boom",
            at("error")
        )
    );

    let message = failure(search(&section(SearchBackend::Searxng, &at("forbidden")), query.clone()).await);
    assert!(
        message.contains("answered HTTP 403 (is `json` listed under search.formats"),
        "{message}"
    );

    let message = failure(search(&section(SearchBackend::Searxng, &at("garbled")), query.clone()).await);
    assert!(
        message.starts_with(&format!(
            "web search through searxng at {} failed: it answered something that is not its search JSON (",
            at("garbled")
        )),
        "{message}"
    );

    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", listener.local_addr().unwrap())
    };
    let message = failure(search(&section(SearchBackend::Searxng, &dead), query.clone()).await);
    assert!(
        message.starts_with(&format!(
            "web search through searxng at {dead} failed: it cannot be reached: "
        )),
        "{message}"
    );
    assert_eq!(fake.seen().len(), 3);
}

#[tokio::test]
async fn a_key_that_cannot_be_read_is_said_at_the_search() {
    let fake = Fake::start(searxng_answer).await;
    let config = WebSearchConfig {
        api_key_env: Some("PASSEPARTOUT_TEST_UNSET_SEARCH_KEY".into()),
        ..section(SearchBackend::Tavily, &fake.base)
    };
    let message = failure(search(&config, json!({"query": "x"})).await);
    assert_eq!(
        message,
        "web search through tavily failed: it has no API key: environment variable \
         PASSEPARTOUT_TEST_UNSET_SEARCH_KEY is not set"
    );
    assert!(fake.seen().is_empty(), "nothing sent without a key");
}

#[tokio::test]
async fn bad_arguments_are_the_models_to_fix() {
    let fake = Fake::start(searxng_answer).await;
    let config = section(SearchBackend::Searxng, &fake.base);
    for arguments in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": "x", "count": 0}),
        json!({"query": "x", "site": "example.com"}),
        json!({"query": "x".repeat(MAX_QUERY_CHARS + 1)}),
    ] {
        let result = search(&config, arguments.clone()).await;
        assert!(
            matches!(result, Err(ToolError::InvalidArguments(_))),
            "{arguments}: {result:?}"
        );
    }
    assert!(fake.seen().is_empty());
}

#[test]
fn no_backend_no_tool() {
    let section = WebSearchConfig::default();
    assert!(WebSearch::new(&section).unwrap().is_none());
    assert!(WebSearch::spec_for(&section).is_none());
    let brave = WebSearchConfig {
        backend: Some(SearchBackend::Brave),
        ..WebSearchConfig::default()
    };
    assert_eq!(WebSearch::spec_for(&brave).unwrap().name, "web_search");
}
