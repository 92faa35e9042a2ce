//! The Brave Search API's web search: `GET /web/search?q=…&count=…` with
//! the key in `X-Subscription-Token`; results under `web.results`, their
//! descriptions in HTML.

use reqwest::{RequestBuilder, Url};
use serde::Deserialize;

use super::backend::{Hit, plain};
use crate::config::Secret;

#[derive(Deserialize)]
pub struct Answer {
    /// Missing when nothing was found.
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

pub fn request(client: &reqwest::Client, endpoint: &Url, key: &Secret, query: &str, count: usize) -> RequestBuilder {
    let mut url = endpoint.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(["web", "search"]);
    }
    client
        .get(url)
        .query(&[("q", query), ("count", &count.to_string())])
        .header(reqwest::header::ACCEPT, "application/json")
        .header("X-Subscription-Token", key.expose())
}

pub fn hits(answer: Answer) -> Vec<Hit> {
    let results = answer.web.map(|web| web.results).unwrap_or_default();
    results
        .into_iter()
        .map(|result| Hit {
            title: plain(&result.title),
            url: result.url,
            snippet: plain(&result.description),
        })
        .collect()
}

pub fn hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (is the API key right?)",
        422 => " (the API refused the query's parameters)",
        429 => " (the plan's rate limit or quota is used up)",
        _ => "",
    }
}
