//! `passepartout setup`'s flags. Every answer the wizard asks for has one, so
//! a script can run it with `--non-interactive`; a secret's flag names where
//! to read it (an environment variable, or standard input), never the secret.
//! The model step's flags are here; each gateway's step keeps its own in
//! its folder, flattened in here through `gateways::setup`.

use clap::{Args, ValueEnum};

pub use crate::config::interview::SecretsMode;

/// `passepartout setup [FLAGS]`.
#[derive(Clone, Debug, Default, Args)]
pub struct SetupArgs {
    /// Ask nothing: every answer comes from these flags and the environment
    /// (for scripts). A required answer that is missing is an error naming its flag.
    #[arg(long)]
    pub non_interactive: bool,
    /// Overwrite an existing configuration file (the old one is kept as FILE.bak).
    #[arg(long)]
    pub force: bool,
    /// Ask for one part again and put it in place of the old one in the
    /// existing file, keeping the rest of the file as it is (the old one is
    /// kept as FILE.bak): `model` (the first [[llm.providers]] entry),
    /// `telegram`, `signal` or `web`.
    #[arg(long, value_name = "PART", conflicts_with = "force", value_parser = super::parts())]
    pub only: Option<String>,
    /// Write the file without checking that the model and the bot answer.
    #[arg(long)]
    pub skip_checks: bool,
    /// Where the secrets go: `file` (files of mode 0600 beside the
    /// configuration) or `env` (not stored: the variables to set are printed).
    #[arg(long, value_enum, default_value_t = SecretsMode::File)]
    pub secrets: SecretsMode,
    /// The model step's.
    #[command(flatten)]
    pub model: ModelFlags,
    /// The gateways' steps'.
    #[command(flatten)]
    pub gateways: crate::gateways::setup::Flags,
}

/// The model step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct ModelFlags {
    /// The model provider's protocol.
    #[arg(long, value_enum, value_name = "KIND")]
    pub model_kind: Option<ModelKind>,
    /// The model provider's base URL, up to and including `/v1`
    /// (default: http://127.0.0.1:11434/v1 for `openai`, https://api.anthropic.com/v1 for `anthropic`).
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// The model's name, e.g. `llama3.2`.
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// Read the model's API key from the environment variable VAR (without
    /// it, and without --model-key-stdin, the model takes no key).
    #[arg(long, value_name = "VAR")]
    pub model_key_env: Option<String>,
    /// Read the model's API key from the first line of standard input.
    #[arg(long, conflicts_with = "model_key_env")]
    pub model_key_stdin: bool,
}

/// The model provider's protocol, as `--model-kind` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelKind {
    /// Any OpenAI-compatible server: Ollama, llama.cpp, vLLM, LM Studio, OpenAI, OpenRouter.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}
