//! `[llm]`: the language models, tried in order (`[[llm.providers]]`), and
//! how the cascade treats a provider that is busy or a model that answers
//! malformed output.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Problems;

/// `[llm]`: the language models, tried in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    pub providers: Vec<ProviderConfig>,
    /// How long a provider that answered 429 is skipped when it did not say
    /// how long to wait, in seconds.
    pub cooldown_s: u64,
    /// Malformed model output (arguments that are not JSON, unknown tools, a
    /// tool call written as text) is sent back to the model as an error at
    /// most this many times per turn; then the turn stops and says so.
    pub max_repairs: u32,
}

pub const DEFAULT_COOLDOWN_S: u64 = 30;
pub const DEFAULT_MAX_REPAIRS: u32 = 3;

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            providers: vec![ProviderConfig::default()],
            cooldown_s: DEFAULT_COOLDOWN_S,
            max_repairs: DEFAULT_MAX_REPAIRS,
        }
    }
}

/// Which wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, LM Studio.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

pub const DEFAULT_PROVIDER_NAME: &str = "local";
pub const DEFAULT_PROVIDER_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_PROVIDER_MODEL: &str = "llama3.2";
pub const DEFAULT_PROVIDER_TIMEOUT_S: u64 = 60;
pub const DEFAULT_PROVIDER_CONNECT_TIMEOUT_S: u64 = 5;

/// One `[[llm.providers]]` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// A short name, shown in status, doctor and error messages.
    pub name: String,
    pub kind: ProviderKind,
    /// The API's base URL, up to and including `/v1`.
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// A file holding the API key (e.g. a systemd credential).
    pub api_key_file: Option<PathBuf>,
    /// Whole-request timeout, in seconds.
    pub timeout_s: u64,
    /// Connection timeout, in seconds.
    pub connect_timeout_s: u64,
    /// Longest answer, in tokens (Anthropic requires it; OpenAI-compatible
    /// servers ignore it here).
    pub max_tokens: u32,
    /// Whether the model can see images: photos people send are shown to
    /// it. A model without it reads the caption, and the person is told.
    pub vision: bool,
    /// What a million tokens sent to it cost, in USD, for `/usage`
    /// (0: free or local, shown as tokens only).
    pub price_in_per_mtok: f64,
    /// What a million tokens it answers with cost, in USD.
    pub price_out_per_mtok: f64,
    /// A proxy for this provider (`http://`, `https://`, `socks5://`,
    /// `socks5h://`), instead of `https_proxy` / `all_proxy`.
    pub proxy: Option<String>,
}

pub const DEFAULT_MAX_TOKENS: u32 = 4096;

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            name: DEFAULT_PROVIDER_NAME.to_owned(),
            kind: ProviderKind::Openai,
            base_url: DEFAULT_PROVIDER_URL.to_owned(),
            model: DEFAULT_PROVIDER_MODEL.to_owned(),
            api_key_env: None,
            api_key_file: None,
            timeout_s: DEFAULT_PROVIDER_TIMEOUT_S,
            connect_timeout_s: DEFAULT_PROVIDER_CONNECT_TIMEOUT_S,
            max_tokens: DEFAULT_MAX_TOKENS,
            vision: false,
            price_in_per_mtok: 0.0,
            price_out_per_mtok: 0.0,
            proxy: None,
        }
    }
}

impl LlmConfig {
    /// Notes what is wrong with `[llm]` and each provider.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(
            !self.providers.is_empty(),
            "llm.providers must list at least one provider",
        );
        let mut names = HashSet::new();
        for (index, provider) in self.providers.iter().enumerate() {
            let at = format!("llm.providers[{index}]");
            problems.check(!provider.name.trim().is_empty(), format!("{at}.name must not be empty"));
            problems.check(
                names.insert(provider.name.as_str()),
                format!("{at}.name {:?} is used twice", provider.name),
            );
            provider.check(&at, problems);
        }
        // After every provider's other problems, as check-config has always listed them.
        for (index, provider) in self.providers.iter().enumerate() {
            problems.check(
                provider.max_tokens > 0,
                format!("llm.providers[{index}].max_tokens must be at least 1"),
            );
        }
    }

    /// Whether a provider is called `name`.
    pub fn has_provider(&self, name: &str) -> bool {
        self.providers.iter().any(|provider| provider.name == name)
    }
}

/// Whether `url` names a proxy reqwest can use.
fn is_proxy_url(url: &str) -> bool {
    matches!(reqwest::Url::parse(url), Ok(url) if matches!(url.scheme(), "http" | "https" | "socks5" | "socks5h") && url.host().is_some())
}

impl ProviderConfig {
    /// Notes what is wrong with the provider's own keys; `at` names it.
    fn check(&self, at: &str, problems: &mut Problems) {
        problems.check(
            matches!(reqwest::Url::parse(&self.base_url), Ok(url) if matches!(url.scheme(), "http" | "https")),
            format!("{at}.base_url {:?} is not an http(s) URL", self.base_url),
        );
        problems.check(!self.model.trim().is_empty(), format!("{at}.model must not be empty"));
        problems.check(self.timeout_s > 0, format!("{at}.timeout_s must be at least 1"));
        problems.check(
            self.connect_timeout_s > 0,
            format!("{at}.connect_timeout_s must be at least 1"),
        );
        problems.check(
            !(self.api_key_env.is_some() && self.api_key_file.is_some()),
            format!("{at}: set api_key_env or api_key_file, not both"),
        );
        for (key, price) in [
            ("price_in_per_mtok", self.price_in_per_mtok),
            ("price_out_per_mtok", self.price_out_per_mtok),
        ] {
            problems.check(
                price.is_finite() && price >= 0.0,
                format!("{at}.{key} must be a price in USD of 0 or more"),
            );
        }
        if let Some(path) = &self.api_key_file
            && let Err(problem) = super::file_access::find_file(path)
        {
            problems.push(format!("{at}.api_key_file {} {problem}", path.display()));
        }
        if let Some(proxy) = &self.proxy {
            problems.check(
                is_proxy_url(proxy),
                format!("{at}.proxy is not an http://, https://, socks5:// or socks5h:// URL"),
            );
        }
    }
}
