//! `passepartout setup`'s flags. Every answer the wizard asks for has one, so
//! a script can run it with `--non-interactive`; a secret's flag names where
//! to read it (an environment variable, or standard input), never the secret.

use clap::{Args, ValueEnum};
use passepartout_telegram::config::DEFAULT_TELEGRAM_API_URL;

/// How long setup waits, by default, for someone to write to the bot.
pub const DEFAULT_CAPTURE_TIMEOUT_S: u64 = 300;

/// `passepartout setup [FLAGS]`.
#[derive(Clone, Debug, Args)]
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
    /// `telegram` or `signal`.
    #[arg(long, value_name = "PART", conflicts_with = "force", value_parser = super::only::parts())]
    pub only: Option<String>,
    /// Write the file without checking that the model and the bot answer.
    #[arg(long)]
    pub skip_checks: bool,
    /// Where the secrets go: `file` (files of mode 0600 beside the
    /// configuration) or `env` (not stored: the variables to set are printed).
    #[arg(long, value_enum, default_value_t = SecretsMode::File)]
    pub secrets: SecretsMode,
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
    /// Set up no Telegram bot.
    #[arg(long, conflicts_with_all = ["telegram_token_env", "telegram_token_stdin", "owner"])]
    pub no_telegram: bool,
    /// Read the Telegram bot token from the environment variable VAR.
    #[arg(long, value_name = "VAR")]
    pub telegram_token_env: Option<String>,
    /// Read the Telegram bot token from the next line of standard input
    /// (after the model's key, when --model-key-stdin reads that too).
    #[arg(long, conflicts_with = "telegram_token_env")]
    pub telegram_token_stdin: bool,
    /// The Bot API server.
    #[arg(long, value_name = "URL", default_value = DEFAULT_TELEGRAM_API_URL)]
    pub telegram_api_url: String,
    /// The owner's Telegram user id; without it, the first person to write to
    /// the bot becomes the owner.
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub owner: Option<i64>,
    /// How long to wait for that first message, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_CAPTURE_TIMEOUT_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub capture_timeout_s: u64,
    /// Link your own Signal account too (a QR code to scan with your phone);
    /// the assistant then answers what you write to Note to Self.
    /// Interactively, setup asks.
    #[arg(long)]
    pub signal_link: bool,
    /// The signal-cli program the daemon starts for Signal.
    #[arg(long, value_name = "PROGRAM", default_value = passepartout_signal::config::DEFAULT_SIGNAL_SPAWN_PROGRAM)]
    pub signal_cli: String,
    /// signal-cli's data folder (`--config`) for the program started: link
    /// into the folder the daemon's user will use (default: signal-cli's own,
    /// under the home of whoever runs setup).
    #[arg(long, value_name = "DIR", conflicts_with = "signal_endpoint")]
    pub signal_config_dir: Option<String>,
    /// Use the signal-cli daemon listening here (`tcp:HOST:PORT` or
    /// `unix:PATH`, started without `-a`) instead of starting signal-cli.
    #[arg(long, value_name = "ENDPOINT", conflicts_with = "signal_cli")]
    pub signal_endpoint: Option<String>,
    /// The name your phone lists the assistant under.
    #[arg(long, value_name = "DEVICE", default_value = crate::signal_link::DEFAULT_DEVICE_NAME)]
    pub signal_device: String,
    /// How long to wait for the phone to link, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::signal_link::DEFAULT_WAIT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub signal_wait_s: u64,
}

/// Where the secrets go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SecretsMode {
    /// Files of mode 0600 beside the configuration file.
    File,
    /// Nowhere: the daemon reads them from environment variables.
    Env,
}

/// The model provider's protocol, as `--model-kind` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelKind {
    /// Any OpenAI-compatible server: Ollama, llama.cpp, vLLM, LM Studio, OpenAI, OpenRouter.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}
