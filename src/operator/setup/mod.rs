//! `passepartout setup`: a guided first run that writes a configuration
//! file that works. It runs a sequence of steps — the model provider, then
//! each gateway's (the Telegram bot, the person's own Signal account, the
//! web dashboard), each asking its questions (or taking the flags'
//! answers), checking them as `doctor` would, and adding its section to the
//! file and its secrets to the files beside it. What a step is given and
//! gives is `config::interview`; the gateways' steps and their flags live
//! in their folders and are listed by `gateways::setup`, so this names none.
//!
//! The pieces here: `args` (the flags), `model`, `model_section` and
//! `model_check` (the model's step, its section, and one short question to
//! the model), and `next` (what to do next: a running daemon reads the file
//! again, else the commands to run).

mod args;
mod model;
mod model_check;
mod model_section;
mod next;

use std::path::Path;
use std::process::ExitCode;

use clap::builder::{PossibleValue, PossibleValuesParser};

use crate::config::interview::{Context, Input, SecretFile, SetupError, Step, Terminal, files, only, render};
pub use args::{ModelFlags, ModelKind, SecretsMode, SetupArgs};

/// The steps, in the order they run, each with its flags' answers.
fn steps(args: &SetupArgs) -> Vec<Box<dyn Step>> {
    let mut steps: Vec<Box<dyn Step>> = vec![Box::new(model::ModelStep {
        flags: args.model.clone(),
    })];
    steps.extend(crate::gateways::setup::steps(&args.gateways));
    steps
}

/// The values `--only` takes: the name of every step.
fn parts() -> PossibleValuesParser {
    let steps = steps(&SetupArgs::default()).into_iter().map(|step| step.only());
    PossibleValuesParser::new(steps.map(|only| PossibleValue::new(only.name).help(only.about)))
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

/// What the wizard says first: which file it writes, or changes only a part
/// of, and how to answer.
fn opening(only: Option<&str>, config_file: &Path) -> String {
    let what = match only {
        None => format!("This writes {}.", config_file.display()),
        Some(part) => format!(
            "This changes the {part} part of {}; the rest of it stays as it is.",
            config_file.display()
        ),
    };
    format!("{what} Press Enter to take the answer in [brackets]; Ctrl-C stops without writing.\n")
}

async fn wizard(args: &SetupArgs, explicit: Option<&Path>, terminal: Option<Terminal>) -> Result<(), SetupError> {
    if !args.non_interactive && terminal.is_none() {
        return Err(SetupError::NoTerminal);
    }
    let config_file = match explicit {
        Some(file) => file.to_path_buf(),
        None => crate::config::default_config_path().ok_or(SetupError::NoPath)?,
    };
    // With --only, the file is there to be changed.
    let old = match args.only {
        None => {
            files::may_write(&config_file, args.force)?;
            None
        }
        Some(_) => Some(only::existing(&config_file)?),
    };
    let mut cx = Context {
        only: args.only.as_deref(),
        skip_checks: args.skip_checks,
        secrets: args.secrets,
        input: Input::new(terminal),
        config_file: &config_file,
        current: old.as_deref(),
    };
    if cx.input.interactive() {
        cx.input.say(&opening(args.only.as_deref(), &config_file));
    }
    // `--only` takes a step's name, and runs that step alone.
    let steps: Vec<_> = (steps(args).into_iter())
        .filter(|step| args.only.as_ref().is_none_or(|part| step.only().name == part))
        .collect();
    let place = steps.first().map(|step| step.only().place);
    let mut parts = Vec::new();
    for step in steps {
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

    let text = match (&old, place, sections.first()) {
        (Some(old), Some(place), Some(section)) => only::replace(old, &config_file, place, section)?,
        (Some(_), Some(_), None) => {
            cx.input.say(&format!("Nothing changed in {}.", config_file.display()));
            return Ok(());
        }
        _ => render::document(&sections),
    };

    files::make_folder(&config_file)?;
    files::write_secrets(&secrets)?;
    files::write_config(&config_file, &text)?;
    // The file is read back as the daemon will read it (without this
    // process's PASSEPARTOUT_… overrides): a file that does not load is a
    // bug here, or, with --only, a clash with the rest of the file (a
    // provider's name other settings give), which puts the old file back.
    let written = match crate::gateways::load(Some(&config_file), Some(Default::default())) {
        Ok(config) => config,
        Err(error) => {
            return Err(match &old {
                Some(old) => {
                    files::restore(&config_file, old)?;
                    SetupError::Refused {
                        path: config_file.clone(),
                        reason: error.to_string(),
                    }
                }
                None => SetupError::Unloadable(error.to_string()),
            });
        }
    };

    let input = &cx.input;
    let done = if old.is_some() { "Changed" } else { "Wrote" };
    input.say(&format!("{done} {}.", config_file.display()));
    for secret in &secrets {
        input.say(&format!("Stored a secret in {} (mode 0600).", secret.path.display()));
    }
    if !variables.is_empty() {
        input.say("The secrets were not stored. Set these in the daemon's environment:");
        for variable in &variables {
            input.say(&format!("  {variable}=…"));
        }
    }
    next::say(input, &written, explicit).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_takes_the_name_of_every_step_once() {
        use clap::builder::TypedValueParser;
        let names: Vec<_> = (parts().possible_values().into_iter().flatten())
            .map(|value| value.get_name().to_owned())
            .collect();
        assert_eq!(names, ["model", "telegram", "signal", "matrix", "web"]);
        let args = |only: &str| {
            use clap::Parser;
            #[derive(Parser)]
            struct Cli {
                #[command(flatten)]
                setup: SetupArgs,
            }
            Cli::try_parse_from(["setup", "--only", only]).map(|cli| cli.setup.only)
        };
        assert_eq!(args("signal").unwrap().as_deref(), Some("signal"));
        assert!(args("discord").is_err(), "a part no step has is refused");
    }
}
