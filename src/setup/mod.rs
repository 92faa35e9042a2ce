//! `passepartout setup`: a guided first run that writes a configuration
//! file that works. It runs a sequence of [`Step`]s — the model provider,
//! the Telegram bot, then (if wanted) the person's own Signal account — each asking its questions (or taking the flags'
//! answers), checking them as `doctor` would, and adding its section to the
//! file and its secrets to the files beside it. A new step is one more
//! entry in [`steps`].
//!
//! The pieces: `args` (the flags), `terminal` and `input` (asking, secrets
//! without echo), `model_check` (one short question to the model), `checks` (the bot's getMe),
//! `model`, `telegram` and `signal` (the steps; the owner is captured
//! through the Telegram gateway's `first_contact`, and Signal is linked
//! through `signal_link`), `render` (the file's text) and
//! `files` (writing it and the secrets, privately).

mod args;
mod checks;
mod error;
mod files;
mod input;
mod model;
mod model_check;
mod render;
mod signal;
mod telegram;
mod terminal;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use async_trait::async_trait;

pub use args::{ModelKind, SecretsMode, SetupArgs};
pub use error::SetupError;
use files::SecretFile;
use input::Input;
use terminal::Terminal;

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

/// What every step works with.
pub struct Context<'a> {
    pub args: &'a SetupArgs,
    pub input: Input,
    /// The configuration file to write.
    pub config_file: &'a Path,
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
    /// Asks, checks, and gives what the step adds.
    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError>;
}

/// The steps, in the order they run.
fn steps() -> Vec<Box<dyn Step>> {
    vec![
        Box::new(model::ModelStep),
        Box::new(telegram::TelegramStep),
        Box::new(signal::SignalStep),
    ]
}

/// Runs the wizard. `explicit` is `--config`; without it the default file
/// is written.
pub async fn run(args: SetupArgs, explicit: Option<&Path>) -> ExitCode {
    let terminal = if args.non_interactive { None } else { Terminal::open() };
    let interrupted = terminal.clone();
    let outcome = tokio::select! {
        outcome = wizard(&args, explicit, terminal) => outcome,
        _ = tokio::signal::ctrl_c() => {
            if let Some(terminal) = interrupted {
                terminal.restore();
            }
            eprintln!("\npassepartout setup: interrupted; the configuration file was not written");
            // A line is still being read on the blocking pool, which the
            // runtime would wait for at its end: leave at once.
            std::process::exit(130);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("passepartout setup: {error}");
            if let Some(hint) = error.hint() {
                eprintln!("  ({hint})");
            }
            ExitCode::from(error.exit_code())
        }
    }
}

async fn wizard(args: &SetupArgs, explicit: Option<&Path>, terminal: Option<Terminal>) -> Result<(), SetupError> {
    if !args.non_interactive && terminal.is_none() {
        return Err(SetupError::NoTerminal);
    }
    let config_file = match explicit {
        Some(file) => file.to_path_buf(),
        None => crate::config::default_config_path().ok_or(SetupError::NoPath)?,
    };
    files::may_write(&config_file, args.force)?;
    let mut cx = Context {
        args,
        input: Input::new(terminal),
        config_file: &config_file,
    };
    if cx.input.interactive() {
        cx.input.say(&format!(
            "This writes {}. Press Enter to take the answer in [brackets]; Ctrl-C stops without writing.\n",
            config_file.display()
        ));
    }
    let mut parts = Vec::new();
    for step in steps() {
        parts.push(step.run(&mut cx).await?);
        if cx.input.interactive() {
            cx.input.say("");
        }
    }
    let sections: Vec<String> = parts
        .iter()
        .map(|part| part.section.clone())
        .filter(|s| !s.is_empty())
        .collect();
    let secrets: Vec<SecretFile> = parts.iter_mut().flat_map(|part| part.secrets.drain(..)).collect();
    let variables: Vec<String> = parts.iter().flat_map(|part| part.variables.clone()).collect();

    files::make_folder(&config_file)?;
    files::write_secrets(&secrets)?;
    files::write_config(&config_file, &render::document(&sections))?;
    // The file is read back as the daemon will read it (without this
    // process's PASSEPARTOUT_… overrides): a file that does not load is a bug here.
    crate::config::load(Some(&config_file), Some(Default::default()))
        .map_err(|error| SetupError::Unloadable(error.to_string()))?;

    let input = &cx.input;
    input.say(&format!("Wrote {}.", config_file.display()));
    for secret in &secrets {
        input.say(&format!("Stored a secret in {} (mode 0600).", secret.path.display()));
    }
    if !variables.is_empty() {
        input.say("The secrets were not stored. Set these in the daemon's environment:");
        for variable in &variables {
            input.say(&format!("  {variable}=…"));
        }
    }
    let config = match explicit {
        Some(file) => format!(" --config {}", file.display()),
        None => String::new(),
    };
    input.say(&format!(
        "Next:\n  passepartout{config} run        # start the assistant\n  passepartout{config} doctor     # check every part of it"
    ));
    Ok(())
}
