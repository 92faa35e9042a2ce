//! The HTTP client the WebDriver commands travel on: the reqwest the daemon
//! already builds, in place of the WebDriver crate's own (a second reqwest
//! with its TLS backend). It only ever speaks to chromedriver on the
//! loopback, so it never goes through a proxy named in the environment.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use thirtyfour::prelude::{WebDriverError, WebDriverResult};
use thirtyfour::session::http::{Body, HttpClient};

/// How long one WebDriver command may take: a page load on a busy machine
/// included, but not forever.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A reqwest client that carries WebDriver commands.
#[derive(Clone)]
pub struct LoopbackClient(reqwest::Client);

impl LoopbackClient {
    pub fn new() -> LoopbackClient {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(COMMAND_TIMEOUT)
            .build()
            .expect("an HTTP client for chromedriver");
        LoopbackClient(client)
    }
}

fn http_error(error: impl std::fmt::Display) -> WebDriverError {
    WebDriverError::HttpError(error.to_string())
}

#[async_trait::async_trait]
impl HttpClient for LoopbackClient {
    async fn send(&self, request: http::Request<Body<'_>>) -> WebDriverResult<http::Response<Bytes>> {
        let (parts, body) = request.into_parts();
        let mut outgoing = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers);
        if let Body::Json(json) = body {
            outgoing = outgoing.json(json);
        }
        let response = outgoing.send().await.map_err(http_error)?;
        let mut answer = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let body = response.bytes().await.map_err(http_error)?;
        answer.body(body).map_err(http_error)
    }

    /// A fresh client, for a session closed after the runtime that made
    /// this one has gone (the crate's fallback when a session is dropped
    /// unclosed).
    async fn new(&self) -> Arc<dyn HttpClient> {
        Arc::new(LoopbackClient::new())
    }
}
