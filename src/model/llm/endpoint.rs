//! Where and how to reach one provider — what every backend needs alike:
//! its name, base URL, model, key and timeouts. The key never shows in
//! `Debug` output (nor in logs that print settings).

use std::fmt;
use std::time::Duration;

use crate::config::Secret;

/// How to reach one provider.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Provider name from the configuration, e.g. `"local"`.
    pub name: String,
    /// Base URL of the API, e.g. `http://127.0.0.1:11434/v1`; a trailing slash is fine.
    pub base_url: String,
    /// Model to ask, e.g. `llama3.2`.
    pub model: String,
    /// The API key, if the provider wants one. Never printed by `Debug`.
    pub api_key: Option<Secret>,
    /// Longest wait for the TCP (and TLS) connection to be established.
    pub connect_timeout: Duration,
    /// Longest wait for a whole request, from sending it to the last byte of the answer.
    pub timeout: Duration,
    /// Whether the model can see images: they are sent to it as image parts.
    pub vision: bool,
    /// The proxy every request goes through (`http://`, `https://`,
    /// `socks5://` or `socks5h://`), instead of what `https_proxy` /
    /// `all_proxy` say. May hold credentials: never printed by `Debug`.
    pub proxy: Option<String>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("vision", &self.vision)
            .field("proxy", &self.proxy.as_ref().map(|_| "<set>"))
            .finish()
    }
}
