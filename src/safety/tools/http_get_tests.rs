//! Tests for `http_get` against a real HTTP server on 127.0.0.1:0 that
//! records every request it receives, so a refusal is proven by the server
//! never seeing the request. Made-up host names are answered by [`FakeDns`];
//! `public.test` is exempt from the address policy, standing in for a public
//! server, so redirects from it to non-public targets can be tested.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use reqwest::dns::{Addrs, Name, Resolving};
use serde_json::json;

use super::*;
use crate::safety::tools::testing;

const CAP: usize = 64;

/// Answers the test host names; anything else does not exist.
#[derive(Default)]
struct FakeDns(HashMap<&'static str, Vec<IpAddr>>);

impl FakeDns {
    fn standard() -> Self {
        let loopback: IpAddr = [127, 0, 0, 1].into();
        Self(HashMap::from([
            ("public.test", vec![loopback]),
            ("loopback.test", vec![loopback]),
            ("internal.test", vec![loopback]),
            ("mixed.test", vec![[10, 0, 0, 1].into(), [93, 184, 216, 34].into()]),
        ]))
    }
}

impl Resolve for FakeDns {
    fn resolve(&self, name: Name) -> Resolving {
        let found = self.0.get(name.as_str()).cloned();
        Box::pin(async move {
            let addresses = found.ok_or("no such test host")?;
            Ok(Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0))) as Addrs)
        })
    }
}

/// A server on 127.0.0.1 that records the path of every request.
struct FakeServer {
    port: u16,
    hits: Arc<Mutex<Vec<String>>>,
}

impl FakeServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let recorded = hits.clone();
        let app = Router::new().fallback(move |uri: Uri| {
            recorded.lock().unwrap().push(uri.path().to_owned());
            answer(uri, port)
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { port, hits }
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

async fn answer(uri: Uri, port: u16) -> Response {
    let text =
        |content_type: &'static str, body: Vec<u8>| ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let redirect = |location: String| (StatusCode::FOUND, [(header::LOCATION, location)]).into_response();
    match uri.path() {
        "/page" => text("text/html; charset=utf-8", b"<p>hello</p>".to_vec()),
        "/feed" => text("application/atom+xml", b"<feed/>".to_vec()),
        "/data" => text("application/json", b"{\"a\":1}".to_vec()),
        "/exact" => text("text/plain", vec![b'a'; CAP]),
        "/big" => text("text/plain", vec![b'a'; CAP + 1]),
        "/big-stream" => {
            let chunks = futures::stream::iter([Ok::<_, std::io::Error>(vec![b'a'; 40]), Ok(vec![b'b'; 40])]);
            ([(header::CONTENT_TYPE, "text/plain")], Body::from_stream(chunks)).into_response()
        }
        "/image" => text("image/png", vec![0x89, b'P', b'N', b'G']),
        "/latin1" => text("text/plain; charset=ISO-8859-1", b"caf\xe9".to_vec()),
        "/missing" => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain")],
            "no such page",
        )
            .into_response(),
        "/redirect-page" => redirect("/page".to_owned()),
        "/redirect-literal" => redirect(format!("http://127.0.0.1:{port}/secret")),
        "/redirect-name" => redirect(format!("http://internal.test:{port}/secret")),
        "/redirect-ftp" => redirect("ftp://example.com/file".to_owned()),
        "/loop" => redirect("/loop".to_owned()),
        "/hang" => std::future::pending().await,
        _ => text("text/plain", b"secret".to_vec()),
    }
}

fn config(allow_private: bool) -> HttpGetConfig {
    HttpGetConfig {
        timeout_s: 5,
        max_bytes: CAP,
        max_redirects: 3,
        allow_private,
        ..HttpGetConfig::default()
    }
}

fn tool(config: &HttpGetConfig) -> HttpGet {
    HttpGet::with_resolver(config, Arc::new(FakeDns::standard()), &["public.test"]).unwrap()
}

async fn get(tool: &HttpGet, url: &str) -> Result<String, ToolError> {
    tool.call(&testing::context(), json!({ "url": url })).await
}

#[track_caller]
fn refusal(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn fetches_a_text_page_with_its_status_line() {
    let server = FakeServer::start().await;
    let output = get(&tool(&config(true)), &server.url("127.0.0.1", "/page"))
        .await
        .unwrap();
    assert_eq!(
        output,
        "HTTP 200, text/html, 12 bytes; the page as Markdown (no main article found)\nhello"
    );
    assert_eq!(server.hits(), ["/page"]);
}

#[tokio::test]
async fn follows_a_redirect_and_names_where_it_ended() {
    let server = FakeServer::start().await;
    let output = get(&tool(&config(true)), &server.url("127.0.0.1", "/redirect-page"))
        .await
        .unwrap();
    let expected = format!(
        "HTTP 200, text/html (redirected to {}), 12 bytes; the page as Markdown (no main article found)\nhello",
        server.url("127.0.0.1", "/page")
    );
    assert_eq!(output, expected);
    assert_eq!(server.hits(), ["/redirect-page", "/page"]);
}

#[tokio::test]
async fn literal_non_public_addresses_are_refused_before_connecting() {
    let server = FakeServer::start().await;
    let tool = tool(&config(false));
    let cases = [
        (server.url("127.0.0.1", "/"), "127.0.0.1 is a loopback address"),
        (server.url("[::1]", "/"), "::1 is a loopback address"),
        ("http://10.0.0.1/".to_owned(), "10.0.0.1 is a private address"),
        (
            "http://169.254.169.254/latest/meta-data".to_owned(),
            "169.254.169.254 is a link-local address",
        ),
        (
            server.url("[::ffff:127.0.0.1]", "/"),
            "::ffff:127.0.0.1 is a loopback address (it carries the IPv4 address 127.0.0.1)",
        ),
        // Other spellings of 127.0.0.1, which the URL parser normalises.
        (server.url("2130706433", "/"), "127.0.0.1 is a loopback address"),
        (server.url("0x7f.1", "/"), "127.0.0.1 is a loopback address"),
        (server.url("0.0.0.0", "/"), "0.0.0.0 is the unspecified address"),
    ];
    for (url, reason) in cases {
        let message = refusal(get(&tool, &url).await);
        assert!(message.starts_with(reason), "{url}: {message}");
        assert!(message.contains("only connects to public addresses"), "{message}");
    }
    assert!(server.hits().is_empty(), "{:?}", server.hits());
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused() {
    let server = FakeServer::start().await;
    let message = refusal(get(&tool(&config(false)), &server.url("loopback.test", "/")).await);
    assert!(
        message.starts_with("loopback.test resolves to 127.0.0.1, which is a loopback address"),
        "{message}"
    );
    assert!(server.hits().is_empty(), "{:?}", server.hits());
}

#[tokio::test]
async fn localhost_is_refused_through_the_system_resolver() {
    let server = FakeServer::start().await;
    let tool = HttpGet::new(&config(false)).unwrap();
    let message = refusal(get(&tool, &server.url("localhost", "/")).await);
    assert!(message.starts_with("localhost resolves to "), "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert!(server.hits().is_empty(), "{:?}", server.hits());
}

#[tokio::test]
async fn a_redirect_to_a_loopback_literal_is_refused() {
    let server = FakeServer::start().await;
    let message = refusal(get(&tool(&config(false)), &server.url("public.test", "/redirect-literal")).await);
    let target = server.url("127.0.0.1", "/secret");
    assert!(
        message.starts_with(&format!(
            "the redirect to {target} was refused: 127.0.0.1 is a loopback address"
        )),
        "{message}"
    );
    assert_eq!(server.hits(), ["/redirect-literal"]);
}

#[tokio::test]
async fn a_redirect_to_a_name_resolving_to_loopback_is_refused() {
    let server = FakeServer::start().await;
    let message = refusal(get(&tool(&config(false)), &server.url("public.test", "/redirect-name")).await);
    assert!(
        message.starts_with("internal.test resolves to 127.0.0.1, which is a loopback address"),
        "{message}"
    );
    let via = format!(
        "(a redirect from {} led there)",
        server.url("public.test", "/redirect-name")
    );
    assert!(message.ends_with(&via), "{message}");
    assert_eq!(server.hits(), ["/redirect-name"]);
}

#[tokio::test]
async fn redirects_past_the_limit_or_to_other_schemes_are_refused() {
    let server = FakeServer::start().await;
    let tool = tool(&config(true));
    let message = refusal(get(&tool, &server.url("127.0.0.1", "/loop")).await);
    assert!(message.starts_with("more than 3 redirects"), "{message}");
    assert_eq!(server.hits(), ["/loop"; 4]);

    let message = refusal(get(&tool, &server.url("127.0.0.1", "/redirect-ftp")).await);
    assert!(
        message.contains("only http and https URLs are fetched, not ftp:"),
        "{message}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused_whether_announced_or_streamed() {
    let server = FakeServer::start().await;
    let tool = tool(&config(true));
    let exact = get(&tool, &server.url("127.0.0.1", "/exact")).await.unwrap();
    assert!(
        exact.starts_with(&format!("HTTP 200, text/plain, {CAP} bytes; text\n")),
        "{exact}"
    );
    for path in ["/big", "/big-stream"] {
        let message = refusal(get(&tool, &server.url("127.0.0.1", path)).await);
        assert_eq!(
            message,
            format!("the body is larger than {CAP} bytes, the most http_get reads")
        );
    }
}

#[tokio::test]
async fn only_text_content_types_are_returned() {
    let server = FakeServer::start().await;
    let tool = tool(&config(true));
    let message = refusal(get(&tool, &server.url("127.0.0.1", "/image")).await);
    assert_eq!(
        message,
        "the content type is image/png, which is not read; http_get reads web pages, text, JSON and PDFs"
    );
    let feed = get(&tool, &server.url("127.0.0.1", "/feed")).await.unwrap();
    assert_eq!(feed, "HTTP 200, application/atom+xml, 7 bytes; text\n<feed/>");
    let data = get(&tool, &server.url("127.0.0.1", "/data")).await.unwrap();
    assert_eq!(
        data,
        "HTTP 200, application/json, 7 bytes; JSON, pretty-printed\n{\n  \"a\": 1\n}"
    );
}

#[tokio::test]
async fn a_body_in_a_declared_legacy_charset_is_decoded_with_a_note() {
    let server = FakeServer::start().await;
    let output = get(&tool(&config(true)), &server.url("127.0.0.1", "/latin1"))
        .await
        .unwrap();
    assert_eq!(
        output,
        "HTTP 200, text/plain, 4 bytes; text; decoded from windows-1252\ncafé"
    );
}

#[tokio::test]
async fn an_error_status_is_a_result_with_the_body() {
    let server = FakeServer::start().await;
    let output = get(&tool(&config(true)), &server.url("127.0.0.1", "/missing"))
        .await
        .unwrap();
    assert_eq!(output, "HTTP 404 (Not Found), text/plain, 12 bytes\nno such page");
}

#[tokio::test]
async fn other_schemes_and_credentials_are_refused() {
    let tool = tool(&config(true));
    let ftp = refusal(get(&tool, "ftp://example.com/file").await);
    assert_eq!(ftp, "only http and https URLs are fetched, not ftp:");
    let file = refusal(get(&tool, "file:///etc/passwd").await);
    assert_eq!(file, "only http and https URLs are fetched, not file:");
    let credentials = refusal(get(&tool, "http://user:secret@example.com/").await);
    assert_eq!(credentials, "URLs with a user name or password are not fetched");
}

#[tokio::test]
async fn invalid_arguments_are_reported_as_such() {
    let tool = tool(&config(true));
    let context = testing::context();
    for arguments in [
        json!({}),
        json!({ "url": 5 }),
        json!({ "url": "http://example.com/", "method": "POST" }),
        json!({ "url": "not a url" }),
        json!({ "url": "/relative/path" }),
    ] {
        let result = tool.call(&context, arguments.clone()).await;
        assert!(
            matches!(result, Err(ToolError::InvalidArguments(_))),
            "{arguments}: {result:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_name_fails_without_being_a_refusal() {
    let result = get(&tool(&config(false)), "http://nowhere.test/").await;
    assert!(
        matches!(result, Err(ToolError::Failed(ref message)) if message.starts_with("cannot connect to http://nowhere.test/")),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_the_configured_limit() {
    let server = FakeServer::start().await;
    let tool = tool(&HttpGetConfig {
        timeout_s: 1,
        ..config(true)
    });
    assert_eq!(tool.timeout(), Some(Duration::from_secs(1) + TIMEOUT_MARGIN));
    let started = Instant::now();
    let result = get(&tool, &server.url("127.0.0.1", "/hang")).await;
    assert_eq!(result, Err(ToolError::TimedOut(Duration::from_secs(1))));
    // The tool's own limit, waited for in full: the error names it, and a
    // bound from above would time the machine rather than the tool.
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(server.hits(), ["/hang"]);
}

#[tokio::test]
async fn the_resolver_drops_refused_addresses_and_keeps_public_ones() {
    let resolver = CheckedResolver::new(Arc::new(FakeDns::standard()), Arc::new(AddressPolicy::new(false)));
    let addresses: Vec<SocketAddr> = resolver.resolve("mixed.test".parse().unwrap()).await.unwrap().collect();
    assert_eq!(addresses, [SocketAddr::new([93, 184, 216, 34].into(), 0)]);
    let error = resolver.resolve("loopback.test".parse().unwrap()).await.err().unwrap();
    let refused = find_cause::<NoPublicAddress>(&*error).expect("the resolver's own error");
    assert_eq!(
        refused.to_string(),
        "loopback.test resolves to 127.0.0.1, which is a loopback address"
    );
}

#[test]
fn the_spec_requires_a_url_and_nothing_else() {
    let spec = tool(&config(false)).spec();
    assert_eq!(spec.name, "http_get");
    assert_eq!(spec.parameters["required"], json!(["url"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
}
