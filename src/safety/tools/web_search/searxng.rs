//! SearXNG's JSON API: `GET /search?q=…&format=json` on the owner's
//! instance, which must list `json` under `search.formats` in its
//! `settings.yml` (else it answers 403).

use reqwest::{RequestBuilder, Url};
use serde::Deserialize;

use super::backend::Hit;

#[derive(Deserialize)]
pub struct Answer {
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: Option<String>,
}

pub fn request(client: &reqwest::Client, endpoint: &Url, query: &str) -> RequestBuilder {
    let mut url = endpoint.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().push("search");
    }
    client.get(url).query(&[("q", query), ("format", "json")])
}

pub fn hits(answer: Answer) -> Vec<Hit> {
    answer
        .results
        .into_iter()
        .map(|result| Hit {
            title: result.title.trim().to_owned(),
            url: result.url,
            snippet: result.content.unwrap_or_default().trim().to_owned(),
        })
        .collect()
}

pub fn hint(status: u16) -> &'static str {
    match status {
        403 => " (is `json` listed under search.formats in its settings.yml?)",
        429 => " (its limiter refused the request)",
        _ => "",
    }
}
