//! A real daemon with the dashboard on, the fake model behind it, and a
//! client signed in with a link the socket hands out, at the chat `/chat`
//! opened: the Chat page's tests, over plain HTTP and in a browser.

use passepartout_admin::WebRequest;
use reqwest::StatusCode;
use reqwest::header;
use reqwest::multipart::{Form, Part};

use super::fake_llm::FakeLlm;
use super::harness::{TestDaemon, WAIT};
use super::web::{field, no_redirects as http, trade_link};

pub struct Chat {
    pub daemon: TestDaemon,
    pub llm: FakeLlm,
    pub base: String,
    pub cookie: String,
    /// The chat `/chat` opened: `/chat/{id}`.
    pub path: String,
}

/// A daemon with the dashboard on, and a client signed in.
pub async fn start() -> Chat {
    let llm = FakeLlm::start().await;
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
        },
        Vec::new(),
    )
    .await;
    let (base, cookie) = sign_in(&daemon).await;
    let path = opened(&base, &cookie).await;
    Chat {
        daemon,
        llm,
        base,
        cookie,
        path,
    }
}

/// Where `GET /chat` sends the browser: the chat used last, or a fresh one.
pub async fn opened(base: &str, cookie: &str) -> String {
    let response = http()
        .get(format!("{base}/chat"))
        .header(header::COOKIE, cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let path = response.headers()[header::LOCATION].to_str().unwrap().to_owned();
    assert!(
        path.starts_with("/chat/") && path.len() == "/chat/".len() + 16,
        "{path}"
    );
    path
}

/// A fresh sign-in link.
pub async fn link(daemon: &TestDaemon) -> String {
    daemon
        .client("link")
        .await
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link")
}

/// Signs in with a fresh link: the dashboard's address and the cookie.
pub async fn sign_in(daemon: &TestDaemon) -> (String, String) {
    trade_link(&link(daemon).await).await
}

/// The Conversations page of the chat at `path`.
pub fn conversation_page(path: &str) -> String {
    use base64::Engine;
    let id = path.trim_start_matches("/chat/");
    let key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("web:owner/{id}"));
    format!("/conversations/{key}")
}

impl Chat {
    pub async fn page(&self) -> String {
        let response = http()
            .get(format!("{}{}", self.base, self.path))
            .header(header::COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.unwrap()
    }

    /// The form as the page makes it: its token and message id, `text`.
    pub async fn form(&self, text: &str) -> (String, String, String) {
        let page = self.page().await;
        (field(&page, "csrf"), field(&page, "id"), text.to_owned())
    }

    /// Posts the chat form from the dashboard's own origin.
    pub async fn post(
        &self,
        (csrf, id, text): &(String, String, String),
        file: Option<Part>,
        stream: bool,
    ) -> reqwest::Response {
        let mut form = Form::new()
            .text("csrf", csrf.clone())
            .text("id", id.clone())
            .text("text", text.clone());
        if let Some(file) = file {
            form = form.part("file", file);
        }
        let mut request = http()
            .post(format!("{}{}", self.base, self.path))
            .header(header::COOKIE, &self.cookie)
            .header(header::ORIGIN, &self.base)
            .multipart(form);
        if stream {
            request = request.header(header::ACCEPT, "text/event-stream");
        }
        tokio::time::timeout(WAIT, request.send())
            .await
            .expect("an answer in time")
            .unwrap()
    }
}
