//! The model step: which provider (an OpenAI-compatible server by default,
//! or Anthropic), where, which model and its API key; then whether it
//! answers one short question (`model_check`). With `--only model`, the
//! file's first provider gives each answer's default, its key kept when
//! none is typed.

use async_trait::async_trait;

use super::args::{ModelFlags, ModelKind};
use super::model_check;
use super::model_section::{self, ModelSection};
use crate::config::interview::{
    AfterFailure, Context, Only, Part, Place, Question, SecretFile, SecretRef, SecretsMode, SetupError, Step,
};
use crate::config::{DEFAULT_PROVIDER_MODEL, DEFAULT_PROVIDER_URL, ProviderConfig, ProviderKind, Secret};
use crate::foundation::checkup::Level;
use crate::model::llm::AnthropicSettings;

/// `[[llm.providers]]`, from its flags' answers or the person's.
pub struct ModelStep {
    pub flags: ModelFlags,
}

/// The answers, before they are checked.
struct Answers {
    /// The provider's name in the file: the file's own with `--only`, else
    /// one by its kind and place.
    name: String,
    kind: ProviderKind,
    base_url: String,
    model: String,
    /// The key the model is checked with: typed, or the kept one's value.
    key: Option<Secret>,
    /// Where the file being changed keeps the key, when it is kept.
    kept: Option<SecretRef>,
}

/// A new provider's name in the file: `local` for a server on this machine.
fn default_name(kind: ProviderKind, base_url: &str) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai if is_local(base_url) => "local",
        ProviderKind::Openai => "openai",
    }
}

impl Answers {
    fn provider(&self) -> ProviderConfig {
        ProviderConfig {
            name: self.name.clone(),
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

/// The first `[[llm.providers]]` entry of `text`, the file `--only`
/// changes; none when it has none or it does not read.
fn current_provider(text: &str) -> Option<ProviderConfig> {
    let file = ::config::Config::builder()
        .add_source(::config::File::from_str(text, ::config::FileFormat::Toml))
        .build()
        .ok()?;
    file.get::<Vec<ProviderConfig>>("llm.providers")
        .ok()?
        .into_iter()
        .next()
}

/// Where `provider` keeps its key, if it names one.
fn key_ref(provider: &ProviderConfig) -> Option<SecretRef> {
    match (&provider.api_key_file, &provider.api_key_env) {
        (Some(file), _) => Some(SecretRef::File(file.clone())),
        (None, Some(variable)) => Some(SecretRef::Env(variable.clone())),
        (None, None) => None,
    }
}

impl ModelStep {
    async fn ask(&self, cx: &mut Context<'_>) -> Result<Answers, SetupError> {
        let args = &self.flags;
        let current = cx.current.and_then(current_provider);
        let current_kind = current.as_ref().map(|provider| provider.kind);
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
                    default: Some(match current_kind {
                        Some(ProviderKind::Anthropic) => "2",
                        _ => "1",
                    }),
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
        // The file's own values, for the kind it has.
        let current = current.filter(|provider| provider.kind == kind);
        let (url, model) = match (&current, kind) {
            (Some(provider), _) => (provider.base_url.as_str(), Some(provider.model.as_str())),
            (None, ProviderKind::Openai) => (DEFAULT_PROVIDER_URL, Some(DEFAULT_PROVIDER_MODEL)),
            (None, ProviderKind::Anthropic) => (AnthropicSettings::DEFAULT_BASE_URL, None),
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
        // In a script, the model is named: the default may not be installed
        // (the file's own model is).
        let model_question = Question {
            prompt: "The model's name",
            flag: "--model-name",
            default: if cx.input.interactive() || current.is_some() {
                model
            } else {
                None
            },
        };
        let model = cx.input.text(model_question, args.model_name.as_deref()).await?;
        let kept = current.as_ref().and_then(key_ref);
        let key = if let Some(name) = &args.model_key_env {
            Some(cx.input.env_secret(name, "--model-key-env")?)
        } else if args.model_key_stdin {
            Some(cx.input.stdin_secret("--model-key-stdin").await?)
        } else {
            let prompt = match kept {
                Some(_) => "Its API key (not shown; Enter keeps the current one): ",
                None => "Its API key (not shown; Enter for none): ",
            };
            cx.input.typed_secret(prompt, true).await?
        };
        let (key, kept) = match (key, kept, &current) {
            (Some(typed), _, _) => (Some(typed), None),
            (None, Some(kept), Some(provider)) => {
                let value = Secret::named(provider.api_key_env.as_deref(), provider.api_key_file.as_deref());
                (value.and_then(Result::ok), Some(kept))
            }
            (None, _, _) => (None, None),
        };
        let name = match &current {
            Some(provider) => provider.name.clone(),
            None => default_name(kind, &base_url).to_owned(),
        };
        Ok(Answers {
            name,
            kind,
            base_url,
            model,
            key,
            kept,
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
        while !cx.skip_checks {
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
        let name = answers.name.clone();
        let mut part = Part::default();
        let key = match (answers.kept, answers.key, cx.secrets) {
            (Some(kept), _, _) => kept,
            (None, None, _) => SecretRef::None,
            (None, Some(secret), SecretsMode::File) => {
                let path = cx.beside_config(&format!("{name}.key"));
                part.secrets.push(SecretFile {
                    path: path.clone(),
                    secret,
                });
                SecretRef::File(path)
            }
            (None, Some(_), SecretsMode::Env) => {
                let variable = (self.flags)
                    .model_key_env
                    .clone()
                    .unwrap_or_else(|| default_key_env(answers.kind).to_owned());
                part.variables.push(variable.clone());
                SecretRef::Env(variable)
            }
        };
        part.section = model_section::render(&ModelSection {
            name,
            kind: answers.kind,
            base_url: answers.base_url,
            model: answers.model,
            key,
        });
        Ok(part)
    }
}
