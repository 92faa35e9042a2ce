//! The model step: which provider (an OpenAI-compatible server by default,
//! or Anthropic), where, which model and its API key; then whether it
//! answers one short question (`model_check`).

use async_trait::async_trait;

use super::args::{ModelKind, SecretsMode};
use super::error::SetupError;
use super::files::SecretFile;
use super::input::{AfterFailure, Question};
use super::model_check;
use super::only::{Only, Place};
use super::render::{self, ModelSection, SecretRef};
use super::{Context, Part, Step};
use crate::checkup::Level;
use crate::config::{DEFAULT_PROVIDER_MODEL, DEFAULT_PROVIDER_URL, ProviderConfig, ProviderKind, Secret};
use crate::llm::AnthropicSettings;

/// `[[llm.providers]]`.
pub struct ModelStep;

/// The answers, before they are checked.
struct Answers {
    kind: ProviderKind,
    base_url: String,
    model: String,
    key: Option<Secret>,
}

impl Answers {
    /// The provider's name in the file: `local` for a server on this machine.
    fn name(&self) -> &'static str {
        match self.kind {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai if is_local(&self.base_url) => "local",
            ProviderKind::Openai => "openai",
        }
    }

    fn provider(&self) -> ProviderConfig {
        ProviderConfig {
            name: self.name().to_owned(),
            kind: self.kind,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            ..ProviderConfig::default()
        }
    }
}

fn is_local(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    match url.host_str() {
        Some("localhost" | "[::1]") => true,
        Some(host) => host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// The variable a key is read from when none is named.
fn default_key_env(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    }
}

impl ModelStep {
    async fn ask(&self, cx: &mut Context<'_>) -> Result<Answers, SetupError> {
        let args = cx.args;
        let kind = match args.model_kind {
            Some(ModelKind::Openai) => ProviderKind::Openai,
            Some(ModelKind::Anthropic) => ProviderKind::Anthropic,
            None => {
                cx.input.say(
                    "The model: 1) an OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI, …)\n           2) Anthropic",
                );
                let question = Question {
                    prompt: "Which one",
                    flag: "--model-kind",
                    default: Some("1"),
                };
                loop {
                    match cx.input.text(question, None).await?.as_str() {
                        "1" | "openai" => break ProviderKind::Openai,
                        "2" | "anthropic" => break ProviderKind::Anthropic,
                        _ => continue,
                    }
                }
            }
        };
        let (url, model) = match kind {
            ProviderKind::Openai => (DEFAULT_PROVIDER_URL, Some(DEFAULT_PROVIDER_MODEL)),
            ProviderKind::Anthropic => (AnthropicSettings::DEFAULT_BASE_URL, None),
        };
        let base_url = loop {
            let url = Question {
                prompt: "Its URL, up to and including /v1",
                flag: "--model-url",
                default: Some(url),
            };
            let answer = cx.input.text(url, args.model_url.as_deref()).await?;
            match reqwest::Url::parse(&answer) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => break answer,
                _ if !cx.input.interactive() => {
                    return Err(SetupError::Missing {
                        flag: "--model-url",
                        what: format!("an http(s) URL (not {answer:?})"),
                    });
                }
                _ => cx.input.say("That is not an http:// or https:// URL."),
            }
        };
        // In a script, the model is named: the default may not be installed.
        let model_question = Question {
            prompt: "The model's name",
            flag: "--model-name",
            default: if cx.input.interactive() { model } else { None },
        };
        let model = cx.input.text(model_question, args.model_name.as_deref()).await?;
        let key = if let Some(name) = &args.model_key_env {
            Some(cx.input.env_secret(name, "--model-key-env")?)
        } else if args.model_key_stdin {
            Some(cx.input.stdin_secret("--model-key-stdin").await?)
        } else {
            let prompt = "Its API key (not shown; Enter for none): ";
            cx.input.typed_secret(prompt, true).await?
        };
        Ok(Answers {
            kind,
            base_url,
            model,
            key,
        })
    }
}

#[async_trait(?Send)]
impl Step for ModelStep {
    fn only(&self) -> Only {
        Only {
            name: "model",
            about: "The model asked first (the first `[[llm.providers]]` entry)",
            place: Place::FirstProvider,
        }
    }

    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError> {
        let mut answers = self.ask(cx).await?;
        while !cx.args.skip_checks {
            let check = model_check::model(&answers.provider(), answers.key.as_ref()).await;
            if check.level == Level::Ok {
                cx.input.say(&format!("The model answers: {}", check.detail));
                break;
            }
            cx.input.say(&format!("The model does not answer: {}", check.detail));
            if let Some(fix) = &check.fix {
                cx.input.say(&format!("  ({fix})"));
            }
            match cx.input.after_failure().await? {
                None => {
                    return Err(SetupError::CheckFailed {
                        check: check.to_string(),
                        hint: "fix the answers, or pass --skip-checks to write the file anyway",
                    });
                }
                Some(AfterFailure::Retry) => continue,
                Some(AfterFailure::Change) => answers = self.ask(cx).await?,
                Some(AfterFailure::Keep) => break,
            }
        }
        let name = answers.name().to_owned();
        let mut part = Part::default();
        let key = match (answers.key, cx.args.secrets) {
            (None, _) => SecretRef::None,
            (Some(secret), SecretsMode::File) => {
                let path = cx.beside_config(&format!("{name}.key"));
                part.secrets.push(SecretFile {
                    path: path.clone(),
                    secret,
                });
                SecretRef::File(path)
            }
            (Some(_), SecretsMode::Env) => {
                let variable = cx
                    .args
                    .model_key_env
                    .clone()
                    .unwrap_or_else(|| default_key_env(answers.kind).to_owned());
                part.variables.push(variable.clone());
                SecretRef::Env(variable)
            }
        };
        part.section = render::model(&ModelSection {
            name,
            kind: answers.kind,
            base_url: answers.base_url,
            model: answers.model,
            key,
        });
        Ok(part)
    }
}
