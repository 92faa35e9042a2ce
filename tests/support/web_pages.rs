//! A real daemon with the dashboard on, its configuration file beside it
//! holding a canary secret, one socket conversation made against the fake
//! model (a tool call, then a reply with known usage), and a client signed
//! in: the Conversations, Usage and Configuration pages' tests, over plain
//! HTTP and in a browser.

use passepartout::Extensions;
use passepartout_admin::WebRequest;
use reqwest::StatusCode;
use reqwest::header;

use super::fake_llm::{FakeLlm, Script};
use super::harness::{TestDaemon, ask};
use super::web::{no_redirects as http, trade_link};

/// An MCP server's key in the configuration file; no response may show it.
pub const CANARY: &str = "canary-d45h2-7c1e";

/// The path of the socket conversation `me`'s page: `socket:me` in base64url.
pub const ME: &str = "/conversations/c29ja2V0Om1l";

pub struct Pages {
    pub daemon: TestDaemon,
    pub llm: FakeLlm,
    /// The dashboard's address, `http://127.0.0.1:PORT`.
    pub base: String,
    /// A second sign-in link, for a browser.
    pub link: String,
    /// The session cookie, `name=value`.
    pub cookie: String,
}

/// A daemon with the dashboard on, its configuration file beside it, and
/// one conversation (`socket:me`): a question, a `current_time` call, and
/// a reply reporting 1234 tokens in and 56 out.
pub async fn start() -> Pages {
    start_with("").await
}

/// As [`start`], with `provider` (lines such as prices) added to the fake
/// model's `[[llm.providers]]` entry.
pub async fn start_with(provider: &str) -> Pages {
    let llm = FakeLlm::start().await;
    // The daemon runs on the file the page shows and the reload reads.
    let (daemon, _file) = TestDaemon::start_from_file(
        &llm,
        &format!(
            "{provider}# the dashboard's test\n[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n\n\
             [[mcp.servers]]\nname = \"notes\"\ncommand = \"true\"\nenabled = false\n\
             env = {{ NOTES_TOKEN = \"{CANARY}\" }} # key: {CANARY}\n"
        ),
        Extensions::default(),
    )
    .await;
    llm.push(Script::ToolCall {
        name: "current_time".into(),
        arguments: "{}".into(),
    });
    llm.push(Script::reply_using("The zebra crossing opens at noon.", 1234, 56));
    let mut client = daemon.client("me").await;
    let (_, reply) = ask(&mut client, "When does the zebra crossing open?").await;
    assert!(reply.contains("zebra crossing opens at noon"), "{reply}");
    let link = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let second = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let (base, cookie) = trade_link(&link).await;
    Pages {
        daemon,
        llm,
        base,
        link: second,
        cookie,
    }
}

impl Pages {
    /// `GET path`, signed in: its status and body, which never holds the canary.
    pub async fn get(&self, path: &str) -> (StatusCode, String) {
        let response = http()
            .get(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(!body.contains(CANARY), "the canary shows in {path}:\n{body}");
        (status, body)
    }

    /// `POST path` with `form`, from the dashboard's own origin, signed in.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> (StatusCode, String) {
        let response = http()
            .post(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, &self.base)
            .form(form)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(!body.contains(CANARY), "the canary shows in {path}:\n{body}");
        (status, body)
    }
}
