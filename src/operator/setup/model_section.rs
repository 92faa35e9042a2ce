//! The model provider's `[[llm.providers]]` entry as the wizard writes it:
//! its name, protocol, address, model and where its key is, each with a
//! comment saying what it is.

use crate::config::ProviderKind;
use crate::config::interview::SecretRef;
use crate::config::interview::render::{path, quoted};

/// The `[[llm.providers]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSection {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub key: SecretRef,
}

/// The model provider's entry.
pub fn render(section: &ModelSection) -> String {
    let kind = match section.kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    };
    let mut text = format!(
        "# The language model. More [[llm.providers]] entries may follow: they are\n\
         # tried in order when one is down.\n\
         [[llm.providers]]\n\
         # A short name, shown by `status` and `doctor`.\n\
         name = {name}\n\
         # \"openai\": any OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI);\n\
         # \"anthropic\": the Anthropic Messages API.\n\
         kind = {kind}\n\
         # The API's base URL, up to and including /v1.\n\
         base_url = {url}\n\
         # The model asked.\n\
         model = {model}\n",
        name = quoted(&section.name),
        kind = quoted(kind),
        url = quoted(&section.base_url),
        model = quoted(&section.model),
    );
    match &section.key {
        SecretRef::None => text.push_str("# No API key: the server takes none.\n"),
        SecretRef::File(file) => text.push_str(&format!(
            "# The file holding the API key (mode 0600).\napi_key_file = {}\n",
            path(file)
        )),
        SecretRef::Env(name) => text.push_str(&format!(
            "# The environment variable holding the API key, set where the daemon runs.\napi_key_env = {}\n",
            quoted(name)
        )),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::interview::render::{assert_commented, document, loaded};

    fn a_model(key: SecretRef) -> ModelSection {
        ModelSection {
            name: "local".into(),
            kind: ProviderKind::Openai,
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3.2 \"quoted\" \\ ünï".into(),
            key,
        }
    }

    #[test]
    fn the_model_section_round_trips_through_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("local \"odd\".key");
        std::fs::write(&key_file, "sk-1").unwrap();
        let config = loaded(&document(&[render(&a_model(SecretRef::File(key_file.clone())))]));
        let provider = &config.llm.providers[0];
        assert_eq!(config.llm.providers.len(), 1);
        assert_eq!(provider.name, "local");
        assert_eq!(provider.kind, ProviderKind::Openai);
        assert_eq!(provider.model, "llama3.2 \"quoted\" \\ ünï");
        assert_eq!(provider.api_key_file.as_deref(), Some(key_file.as_path()));
        assert_eq!(provider.api_key_env, None);

        let config = loaded(&document(&[render(&ModelSection {
            kind: ProviderKind::Anthropic,
            key: SecretRef::Env("ANTHROPIC_API_KEY".into()),
            ..a_model(SecretRef::None)
        })]));
        assert_eq!(config.llm.providers[0].kind, ProviderKind::Anthropic);
        assert_eq!(
            config.llm.providers[0].api_key_env.as_deref(),
            Some("ANTHROPIC_API_KEY")
        );
        let config = loaded(&document(&[render(&a_model(SecretRef::None))]));
        assert_eq!(config.llm.providers[0].api_key_env, None);
        assert_eq!(config.llm.providers[0].api_key_file, None);
    }

    #[test]
    fn every_setting_written_has_a_comment_above_it() {
        let text = document(&[render(&a_model(SecretRef::Env("OPENAI_API_KEY".into())))]);
        assert!(text.starts_with("# passepartout's configuration"), "{text}");
        assert_commented(&text);
    }
}
