//! Tavily's search API: `POST /search` with a JSON body and the key as a
//! bearer token; results under `results`.

use reqwest::{RequestBuilder, Url};
use serde::{Deserialize, Serialize};

use super::backend::Hit;
use crate::config::Secret;

#[derive(Serialize)]
struct Request<'a> {
    query: &'a str,
    max_results: usize,
}

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
    content: String,
}

pub fn request(client: &reqwest::Client, endpoint: &Url, key: &Secret, query: &str, count: usize) -> RequestBuilder {
    let mut url = endpoint.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().push("search");
    }
    client.post(url).bearer_auth(key.expose()).json(&Request {
        query,
        max_results: count,
    })
}

pub fn hits(answer: Answer) -> Vec<Hit> {
    answer
        .results
        .into_iter()
        .map(|result| Hit {
            title: result.title.trim().to_owned(),
            url: result.url,
            snippet: result.content.trim().to_owned(),
        })
        .collect()
}

pub fn hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (is the API key right?)",
        429 | 432 | 433 => " (the plan's rate limit or credits are used up)",
        _ => "",
    }
}
