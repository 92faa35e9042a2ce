//! `web_search {query, count}`: asks the search service the owner
//! configured (`[tools.web_search]`) and returns each result's title, URL
//! and snippet, for the model to read further with `http_get`. Offered only
//! when a backend is configured.
//!
//! The address checks of `http_get` do not apply here, by design: the
//! model chooses what to search for, never where the query goes. The
//! endpoint is the owner's setting, trusted like a model provider's
//! `base_url`, so a SearXNG instance on this machine works. The URLs in the
//! results are only text; fetching one goes through `http_get` and its
//! checks.

mod backend;
mod brave;
mod searxng;
mod tavily;

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::config::{Secret, WebSearchConfig};
use crate::model::llm::ToolSpec;
use backend::Backend;
pub use backend::{Hit, SearchError};

const NAME: &str = "web_search";

/// How much longer than the request timeout the tool box waits, so that the
/// request's own timeout error is the one reported.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(2);

/// The longest query taken, in characters.
const MAX_QUERY_CHARS: usize = 400;

/// The longest snippet shown, in characters.
const MAX_SNIPPET_CHARS: usize = 400;

const USER_AGENT: &str = concat!("passepartout/", env!("CARGO_PKG_VERSION"));

/// The model's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    query: String,
    count: Option<usize>,
}

/// The `web_search` tool.
pub struct WebSearch {
    client: reqwest::Client,
    backend: Backend,
    count: usize,
    max_count: usize,
}

/// The search tool could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot build the web_search client")]
    Client(#[source] reqwest::Error),
    #[error("tools.web_search.base_url {0:?} is not a URL")]
    Url(String),
}

impl WebSearch {
    /// The tool `section` configures, or `None` when it names no backend.
    /// A key that cannot be read is said at each search, not here: the
    /// daemon starts without it, as it does for a model provider's.
    pub fn new(section: &WebSearchConfig) -> Result<Option<Self>, BuildError> {
        let (Some(kind), Some(endpoint)) = (section.backend, section.endpoint()) else {
            return Ok(None);
        };
        let endpoint = Url::parse(endpoint).map_err(|_| BuildError::Url(endpoint.to_owned()))?;
        let key = match Secret::named(section.api_key_env.as_deref(), section.api_key_file.as_deref()) {
            None => Ok(None),
            Some(Ok(key)) => Ok(Some(key)),
            Some(Err(error)) => {
                tracing::warn!(backend = kind.name(), %error, "no API key for web search");
                Err(error.to_string())
            }
        };
        let timeout = Duration::from_secs(section.timeout_s);
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(BuildError::Client)?;
        Ok(Some(Self {
            client,
            backend: Backend {
                kind,
                endpoint,
                key,
                timeout,
            },
            count: section.count,
            max_count: section.max_count,
        }))
    }

    /// The spec of the tool `section` sets up, if it sets one up.
    pub fn spec_for(section: &WebSearchConfig) -> Option<ToolSpec> {
        section.endpoint()?;
        Some(spec(section.count, section.max_count))
    }
}

fn spec(count: usize, max_count: usize) -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: format!(
            "Search the web. Returns each result's title, URL and a snippet; read a result with http_get. \
             Returns {count} results unless count says otherwise (at most {max_count})."
        ),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for, as you would type it into a search engine."},
                "count": {"type": "integer", "minimum": 1, "maximum": max_count, "description": "How many results to return."}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> ToolSpec {
        spec(self.count, self.max_count)
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.backend.timeout + TIMEOUT_MARGIN)
    }

    async fn call(&self, _context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let Arguments { query, count } = parse_arguments(arguments)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments("query is empty".to_owned()));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(ToolError::InvalidArguments(format!(
                "query is longer than {MAX_QUERY_CHARS} characters"
            )));
        }
        let count = match count {
            Some(0) => return Err(ToolError::InvalidArguments("count must be at least 1".to_owned())),
            Some(count) => count.min(self.max_count),
            None => self.count,
        };
        let hits = self.backend.search(&self.client, query, count).await.map_err(|error| {
            ToolError::Failed(format!(
                "web search through {} failed: it {error}",
                self.backend.label()
            ))
        })?;
        Ok(render(query, &self.backend.label(), &hits))
    }
}

/// The results as the model reads them, numbered.
fn render(query: &str, source: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for {query:?} from {source}.");
    }
    let mut out = format!(
        "{} result{} for {query:?} from {source}:\n",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" }
    );
    for (number, hit) in hits.iter().enumerate() {
        let title = if hit.title.is_empty() { "(no title)" } else { &hit.title };
        out.push_str(&format!("\n{}. {title}\n   {}\n", number + 1, hit.url));
        if !hit.snippet.is_empty() {
            let snippet: String = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = snippet.chars().take(MAX_SNIPPET_CHARS).collect();
            let more = if cut.len() < snippet.len() { "…" } else { "" };
            out.push_str(&format!("   {cut}{more}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
