//! What every search backend gives and how it fails: results as [`Hit`]s,
//! failures as a [`SearchError`] the tool words for the model, naming the
//! backend. Each wire format is a module of its own (`searxng`, `brave`,
//! `tavily`); [`Backend`] sends a query to the configured one.

use std::time::Duration;

use reqwest::{Response, Url};
use serde::de::DeserializeOwned;
use thiserror::Error;

use super::{brave, searxng, tavily};
use crate::config::{SearchBackend, Secret};
use crate::safety::tools::http_get::root_cause;

/// Most bytes of an error answer's body quoted.
const ERROR_EXCERPT_BYTES: usize = 300;

/// One search result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Why a backend gave no results.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SearchError {
    #[error("has no API key: {0}")]
    NoKey(String),
    #[error("cannot be reached: {0}")]
    Transport(String),
    #[error("did not answer within {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("answered HTTP {status}{hint}: {excerpt}")]
    Status {
        status: u16,
        /// What the status usually means for this backend.
        hint: &'static str,
        excerpt: String,
    },
    #[error("answered something that is not its search JSON ({0})")]
    Malformed(String),
}

/// The configured search service, ready to ask.
pub struct Backend {
    pub kind: SearchBackend,
    /// Where requests go: the configured `base_url` or the public API.
    pub endpoint: Url,
    /// The API key, or why it could not be read (said when a search is
    /// tried, so that a missing key is a degraded start, not a failed one).
    pub key: Result<Option<Secret>, String>,
    pub timeout: Duration,
}

impl Backend {
    /// The backend as named in errors: `searxng at http://127.0.0.1:8888/`.
    pub fn label(&self) -> String {
        match self.kind {
            SearchBackend::Searxng => format!("searxng at {}", self.endpoint),
            kind => kind.name().to_owned(),
        }
    }

    /// Asks for `count` results for `query`.
    pub async fn search(&self, client: &reqwest::Client, query: &str, count: usize) -> Result<Vec<Hit>, SearchError> {
        let request = match self.kind {
            SearchBackend::Searxng => searxng::request(client, &self.endpoint, query),
            SearchBackend::Brave => brave::request(client, &self.endpoint, self.key()?, query, count),
            SearchBackend::Tavily => tavily::request(client, &self.endpoint, self.key()?, query, count),
        };
        let response = request.send().await.map_err(|error| self.transport(&error))?;
        let mut hits = match self.kind {
            SearchBackend::Searxng => searxng::hits(self.answer(response, searxng::hint).await?),
            SearchBackend::Brave => brave::hits(self.answer(response, brave::hint).await?),
            SearchBackend::Tavily => tavily::hits(self.answer(response, tavily::hint).await?),
        };
        hits.retain(|hit| !hit.url.is_empty());
        hits.truncate(count);
        Ok(hits)
    }

    fn key(&self) -> Result<&Secret, SearchError> {
        match &self.key {
            Ok(Some(key)) => Ok(key),
            Ok(None) => Err(SearchError::NoKey("none is configured".to_owned())),
            Err(why) => Err(SearchError::NoKey(why.clone())),
        }
    }

    /// A successful answer's body read as `T`, or the error it is.
    async fn answer<T: DeserializeOwned>(
        &self,
        response: Response,
        hint: fn(u16) -> &'static str,
    ) -> Result<T, SearchError> {
        let status = response.status();
        let body = response.bytes().await.map_err(|error| self.transport(&error))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let mut end = text.len().min(ERROR_EXCERPT_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return Err(SearchError::Status {
                status: status.as_u16(),
                hint: hint(status.as_u16()),
                excerpt: text[..end].trim().to_owned(),
            });
        }
        serde_json::from_slice(&body).map_err(|error| SearchError::Malformed(error.to_string()))
    }

    fn transport(&self, error: &reqwest::Error) -> SearchError {
        if error.is_timeout() {
            SearchError::TimedOut(self.timeout)
        } else {
            SearchError::Transport(root_cause(error))
        }
    }
}

/// The text of an HTML snippet (Brave marks the words matched with
/// `<strong>` and escapes entities).
pub fn plain(snippet: &str) -> String {
    if !snippet.contains(['<', '&']) {
        return snippet.trim().to_owned();
    }
    dom_query::Document::fragment(snippet).root().text().trim().to_owned()
}
