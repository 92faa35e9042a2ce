//! The interview that writes the configuration file: what one part of
//! `passepartout setup` is given and gives. A [`Step`] asks its questions
//! (or takes its flags' answers), checks them, and gives its [`Part`]: its
//! section of the file and its secrets. The model's step lives with the
//! wizard (`operator::setup`); each gateway's lives in its own folder under
//! `gateways/` and is listed there, so the wizard names no gateway.
//!
//! The pieces: `input` and `terminal` (asking, secrets without echo),
//! `only` (one part asked again and put in place of the old one), `render`
//! (the file's text), `files` (writing it and the secrets, privately) and
//! `error` (why the interview stopped).

mod error;
pub mod files;
mod input;
pub mod only;
pub mod render;
mod terminal;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use clap::ValueEnum;

pub use error::SetupError;
pub use files::SecretFile;
pub use input::{AfterFailure, Input, Question};
pub use only::{Only, OnlyError, Place};
pub use render::SecretRef;
pub use terminal::Terminal;

/// Where the secrets go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum SecretsMode {
    /// Files of mode 0600 beside the configuration file.
    #[default]
    File,
    /// Nowhere: the daemon reads them from environment variables.
    Env,
}

/// What a step adds to the outcome.
#[derive(Default)]
pub struct Part {
    /// Its section of the configuration file, with comments; empty for none.
    pub section: String,
    /// The secrets to store in files.
    pub secrets: Vec<SecretFile>,
    /// The environment variables the daemon must be given (`--secrets env`).
    pub variables: Vec<String>,
}

/// What every step works with: the answers common to all of them, the
/// terminal, and the file being written.
pub struct Context<'a> {
    /// With `--only`, the one part asked for again.
    pub only: Option<&'a str>,
    /// `--skip-checks`: write without asking the model or the bot.
    pub skip_checks: bool,
    /// `--secrets`: where the secrets go.
    pub secrets: SecretsMode,
    /// Asks, or says why an answer is missing.
    pub input: Input,
    /// The configuration file to write.
    pub config_file: &'a Path,
    /// With `--only`, the text of the file being changed, whose values a
    /// step offers as its answers' defaults.
    pub current: Option<&'a str>,
}

impl Context<'_> {
    /// A file named `name` in the configuration file's folder.
    pub fn beside_config(&self, name: &str) -> PathBuf {
        self.config_file.with_file_name(name)
    }
}

/// One part of the setup.
#[async_trait(?Send)]
pub trait Step {
    /// What `--only` calls it, and where its part stands in the file.
    fn only(&self) -> Only;

    /// Asks, checks, and gives what the step adds.
    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError>;
}
