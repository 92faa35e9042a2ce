//! `passepartout signal link [--name DEVICE] [--write] [--wait-s N]`: make
//! the assistant a linked device of your own Signal account, shown a QR code
//! to scan with the phone, and say (or write) the `[signal]` settings that
//! follow. The flow itself is [`link`]'s.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::link::{self as signal_link, LinkRequest, section_lines, write_linked};
use crate::config::{self, Config};

/// The exit code of a link stopped with Ctrl-C.
const EXIT_CANCELLED: u8 = 130;

/// `passepartout signal …`.
#[derive(Debug, Subcommand)]
pub enum SignalCommand {
    /// Link the assistant to your own Signal account, as a new device of it
    /// (scan the QR code shown with Signal on your phone); it then answers
    /// what you write to Note to Self.
    Link {
        /// The name your phone lists the assistant under.
        #[arg(long, value_name = "DEVICE", default_value = signal_link::DEFAULT_DEVICE_NAME)]
        name: String,
        /// Write the settings into the configuration file (keeping the rest
        /// of it) instead of printing them.
        #[arg(long)]
        write: bool,
        /// How long to wait for the phone, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = signal_link::DEFAULT_WAIT.as_secs())]
        wait_s: u64,
    },
}

/// Runs `signal …` with `config`, read from `file` (if any).
pub async fn run(config: &Config, file: Option<&Path>, command: SignalCommand) -> ExitCode {
    let SignalCommand::Link { name, write, wait_s } = command;
    let request = LinkRequest {
        device_name: name,
        wait: Duration::from_secs(wait_s),
    };
    let linking = signal_link::link(config, &request, |uri| show(uri.as_str(), request.wait));
    let linked = tokio::select! {
        linked = linking => linked,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("passepartout: stopped; nothing was linked");
            return ExitCode::from(EXIT_CANCELLED);
        }
    };
    let linked = match linked {
        Ok(linked) => linked,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("Linked: {} (as \"{}\").", linked.number, request.device_name);
    if let Some(warning) = others_listed(config) {
        println!("{warning}");
    }
    if !write {
        let file = file.map_or_else(|| "your configuration file".to_owned(), |f| f.display().to_string());
        println!("\nSet these in [signal] of {file} (or run again with --write):\n");
        print!("{}", section_lines(&config.signal, &linked));
        return ExitCode::SUCCESS;
    }
    let Some(path) = file.map(Path::to_path_buf).or_else(config::default_config_path) else {
        eprintln!("passepartout: no configuration file to write (give --config FILE); the settings are:");
        eprint!("{}", section_lines(&config.signal, &linked));
        return ExitCode::FAILURE;
    };
    write_and_check(&path, config, &linked)
}

/// A warning when `[signal]` still lets other people in: on the person's
/// own account the assistant answers them from the person's number.
fn others_listed(config: &Config) -> Option<String> {
    let section = &config.signal;
    let listed = section.allowed_senders.len() + section.allowed_groups.len();
    (listed > 0).then(|| {
        format!(
            "Note: [signal] still lets {listed} other sender(s) or group(s) talk to the assistant \
             (allowed_senders, allowed_groups). On your own account it answers them from your number; \
             remove them unless you want that."
        )
    })
}

/// What the person sees while the phone is to scan.
fn show(uri: &str, wait: Duration) {
    print!("{}", signal_link::instructions(uri, wait));
}

/// Writes the settings into `path` and loads it again, to show it holds.
fn write_and_check(path: &Path, config: &Config, linked: &passepartout_signal::Linked) -> ExitCode {
    if let Err(error) = write_linked(path, &config.signal, linked) {
        eprintln!("passepartout: {error}; the settings are:");
        eprint!("{}", section_lines(&config.signal, linked));
        return ExitCode::FAILURE;
    }
    println!("Wrote [signal] of {}.", path.display());
    match crate::gateways::load(Some(path), None) {
        Ok(_) => {
            println!("It loads; start the daemon, then write to your Note to Self.");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("passepartout: {} does not load now: {error}", path.display());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_people_still_listed_are_pointed_out() {
        let mut config = Config::default();
        assert_eq!(others_listed(&config), None);
        config.signal.allowed_senders = vec!["+15550000042".into()];
        config.signal.allowed_groups = vec!["R3JvdXA=".into()];
        let warning = others_listed(&config).unwrap();
        assert!(warning.contains("2 other sender(s) or group(s)"), "{warning}");
    }
}
