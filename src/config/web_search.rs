//! `[tools.web_search]`: the search service the `web_search` tool asks — a
//! SearXNG instance of your own (its JSON API), the Brave Search API or
//! Tavily — and how many results it returns. With no `backend`, the tool is
//! not offered.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_SEARCH_TIMEOUT_S: u64 = 15;
pub const DEFAULT_SEARCH_COUNT: usize = 5;
pub const DEFAULT_SEARCH_MAX_COUNT: usize = 10;
/// The most results Brave and Tavily return for one request.
pub const MAX_SEARCH_COUNT: usize = 20;
pub const BRAVE_BASE_URL: &str = "https://api.search.brave.com/res/v1";
pub const TAVILY_BASE_URL: &str = "https://api.tavily.com";

/// Which search service answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackend {
    /// A SearXNG instance's JSON API (`/search?format=json`); it needs
    /// `base_url` and the `json` format enabled in its `settings.yml`.
    Searxng,
    /// The Brave Search API's web search; it needs an API key.
    Brave,
    /// Tavily's search API; it needs an API key.
    Tavily,
}

impl SearchBackend {
    /// The name used in settings and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
        }
    }

    /// Whether the service wants an API key.
    pub fn needs_key(self) -> bool {
        !matches!(self, Self::Searxng)
    }

    /// The service's public URL, where it has one.
    pub fn public_url(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::Brave => Some(BRAVE_BASE_URL),
            Self::Tavily => Some(TAVILY_BASE_URL),
        }
    }
}

/// `[tools.web_search]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// The search service; none: `web_search` is not offered.
    pub backend: Option<SearchBackend>,
    /// The service's URL. Required for SearXNG (e.g.
    /// `http://127.0.0.1:8888`); Brave and Tavily use their public API unless
    /// it is set. You set it, so it may be on this machine or your LAN: the
    /// model only chooses the query, never where it is sent.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (Brave, Tavily).
    pub api_key_env: Option<String>,
    /// A file holding the API key (e.g. a systemd credential).
    pub api_key_file: Option<PathBuf>,
    /// Whole request, in seconds.
    pub timeout_s: u64,
    /// Results returned when the model does not say how many.
    pub count: usize,
    /// Most results the model may ask for.
    pub max_count: usize,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            backend: None,
            base_url: None,
            api_key_env: None,
            api_key_file: None,
            timeout_s: DEFAULT_SEARCH_TIMEOUT_S,
            count: DEFAULT_SEARCH_COUNT,
            max_count: DEFAULT_SEARCH_MAX_COUNT,
        }
    }
}

impl WebSearchConfig {
    /// The URL requests go to: `base_url`, or the backend's public API.
    pub fn endpoint(&self) -> Option<&str> {
        let backend = self.backend?;
        self.base_url.as_deref().or(backend.public_url())
    }

    /// Notes what is wrong with `[tools.web_search]`.
    pub fn check(&self, problems: &mut Problems) {
        const AT: &str = "tools.web_search";
        problems.check(self.timeout_s > 0, format!("{AT}.timeout_s must be at least 1"));
        problems.check(
            (1..=MAX_SEARCH_COUNT).contains(&self.max_count),
            format!("{AT}.max_count must be between 1 and {MAX_SEARCH_COUNT}"),
        );
        problems.check(
            (1..=self.max_count.max(1)).contains(&self.count),
            format!("{AT}.count must be between 1 and {AT}.max_count ({})", self.max_count),
        );
        if let Some(url) = &self.base_url {
            problems.check(
                matches!(reqwest::Url::parse(url), Ok(parsed) if matches!(parsed.scheme(), "http" | "https")),
                format!("{AT}.base_url {url:?} is not an http(s) URL"),
            );
        }
        problems.check(
            !(self.api_key_env.is_some() && self.api_key_file.is_some()),
            format!("{AT}: set api_key_env or api_key_file, not both"),
        );
        if let Some(path) = &self.api_key_file
            && let Err(problem) = super::file_access::find_file(path)
        {
            problems.push(format!("{AT}.api_key_file {} {problem}", path.display()));
        }
        let has_key = self.api_key_env.is_some() || self.api_key_file.is_some();
        match self.backend {
            // Settings for a search nobody turned on would be ignored in silence.
            None => problems.check(
                self.base_url.is_none() && !has_key,
                format!("{AT}: base_url or an API key is set but no backend; set {AT}.backend"),
            ),
            Some(backend @ SearchBackend::Searxng) => {
                problems.check(
                    self.base_url.is_some(),
                    format!("{AT}.base_url is required with backend = \"searxng\" (your instance's URL)"),
                );
                problems.check(
                    !has_key,
                    format!("{AT}: backend = \"{}\" takes no API key", backend.name()),
                );
            }
            Some(backend) => problems.check(
                has_key,
                format!(
                    "{AT}: backend = \"{}\" needs an API key: set api_key_env or api_key_file",
                    backend.name()
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(section: &WebSearchConfig) -> Vec<String> {
        let mut problems = Problems::default();
        section.check(&mut problems);
        problems.into_vec()
    }

    #[test]
    fn no_backend_is_valid_and_offers_nothing() {
        let section = WebSearchConfig::default();
        assert!(problems(&section).is_empty());
        assert_eq!(section.endpoint(), None);
    }

    #[test]
    fn each_backend_needs_what_it_uses() {
        let searxng = WebSearchConfig {
            backend: Some(SearchBackend::Searxng),
            ..WebSearchConfig::default()
        };
        assert_eq!(
            problems(&searxng),
            ["tools.web_search.base_url is required with backend = \"searxng\" (your instance's URL)"]
        );
        let brave = WebSearchConfig {
            backend: Some(SearchBackend::Brave),
            ..WebSearchConfig::default()
        };
        assert_eq!(
            problems(&brave),
            ["tools.web_search: backend = \"brave\" needs an API key: set api_key_env or api_key_file"]
        );
        let brave = WebSearchConfig {
            api_key_env: Some("BRAVE_API_KEY".into()),
            ..brave
        };
        assert!(problems(&brave).is_empty());
        assert_eq!(brave.endpoint(), Some(BRAVE_BASE_URL));
    }

    #[test]
    fn bad_values_and_orphan_settings_are_named() {
        let section = WebSearchConfig {
            base_url: Some("searx.local".into()),
            api_key_env: Some("KEY".into()),
            api_key_file: Some("/nowhere/key".into()),
            timeout_s: 0,
            count: 30,
            max_count: 25,
            ..WebSearchConfig::default()
        };
        let found = problems(&section);
        for expected in [
            "tools.web_search.timeout_s must be at least 1",
            "tools.web_search.max_count must be between 1 and 20",
            "tools.web_search.count must be between 1 and tools.web_search.max_count (25)",
            "tools.web_search.base_url \"searx.local\" is not an http(s) URL",
            "tools.web_search: set api_key_env or api_key_file, not both",
            "tools.web_search.api_key_file /nowhere/key",
            "tools.web_search: base_url or an API key is set but no backend",
        ] {
            assert!(
                found.iter().any(|p| p.starts_with(expected)),
                "{expected} missing from {found:?}"
            );
        }
        assert_eq!(found.len(), 7, "{found:?}");
    }

    #[test]
    fn the_file_is_checked_with_the_accepted_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[tools.web_search]\nbackend = \"searx\"\nmax_cont = 3\n").unwrap();
        let error = super::super::load(Some(&path), Some(Default::default()))
            .unwrap_err()
            .to_string();
        for expected in [
            "tools.web_search.backend: \"searx\" is not one of \"searxng\", \"brave\", \"tavily\"",
            "tools.web_search.max_cont is not a setting; did you mean tools.web_search.max_count?",
        ] {
            assert!(error.contains(expected), "{expected} missing from {error}");
        }
    }
}
