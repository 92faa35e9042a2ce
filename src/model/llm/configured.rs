//! The configured model providers (`[[llm.providers]]`) as clients, in
//! the order the cascade tries them; built at start and again when the
//! configuration is reloaded.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use super::{AnthropicClient, AnthropicSettings, ChatModel, Endpoint, OpenAiClient};
use crate::config::{Config, ProviderConfig, ProviderKind, Secret};

/// A provider whose client cannot be built.
#[derive(Debug, Error)]
#[error("cannot set up model provider {name}: {reason}")]
pub struct ProviderError {
    pub name: String,
    pub reason: String,
}

/// Every configured provider's client. A missing API key is a degraded
/// provider (it answers 401 and `doctor` says which variable to set), not
/// an error.
pub fn providers(config: &Config) -> Result<Vec<Arc<dyn ChatModel>>, ProviderError> {
    config
        .llm
        .providers
        .iter()
        .map(|provider| {
            let api_key = Secret::named(provider.api_key_env.as_deref(), provider.api_key_file.as_deref())
                .unwrap_or_else(|| Ok(Secret::new(String::new())));
            // A missing key is a degraded start, not a failed one: the
            // provider answers 401 and doctor says which variable to set.
            let api_key = match api_key {
                Ok(key) if key.expose().is_empty() => None,
                Ok(key) => Some(key),
                Err(error) => {
                    tracing::warn!(provider = %provider.name, %error, "no API key");
                    None
                }
            };
            client(provider, api_key)
        })
        .collect()
}

/// The client of one `[[llm.providers]]` entry, with its key already read.
pub fn client(provider: &ProviderConfig, api_key: Option<Secret>) -> Result<Arc<dyn ChatModel>, ProviderError> {
    let endpoint = Endpoint {
        name: provider.name.clone(),
        base_url: provider.base_url.clone(),
        model: provider.model.clone(),
        api_key,
        connect_timeout: Duration::from_secs(provider.connect_timeout_s),
        timeout: Duration::from_secs(provider.timeout_s),
        vision: provider.vision,
        proxy: provider.proxy.clone(),
    };
    let client: Result<Arc<dyn ChatModel>, _> = match provider.kind {
        ProviderKind::Openai => OpenAiClient::new(endpoint).map(|client| Arc::new(client) as _),
        ProviderKind::Anthropic => AnthropicClient::new(AnthropicSettings {
            endpoint,
            max_tokens: provider.max_tokens,
        })
        .map(|client| Arc::new(client) as _),
    };
    client.map_err(|error| ProviderError {
        name: provider.name.clone(),
        reason: error.to_string(),
    })
}
