//! The command line: `run` (the daemon) and the client commands that talk to
//! it through the local socket (`chat`, `send`, `status`, `approvals`, `loops`,
//! `pair`, `access`, `people`, `link`, `reload`), plus `setup` (the guided first run),
//! `doctor`, `check-config` and `signal link` (your own Signal account).
//! `--config FILE` is global, so clients find the daemon's
//! socket through the same file.

mod approvals;
mod chat;
mod chat_log;
mod chat_terminal;
mod client;
mod configuration;
mod line_editor;
mod log_redaction;
mod logging;
mod loops;
mod manual;
mod markdown_stream;
mod one_word;
mod pair;
mod people;
mod reconnect;
mod reload;
mod restore;
mod runtime;
mod streamed;
mod terminal;
mod tools;
mod turn_keys;
mod web;
mod web_open;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use passepartout_gateway::LiveSecrets;

use crate::config::{self, Config};
use crate::daemon::StartError;
use crate::daemon::recent_logs::RecentLogs;
use crate::safety::skills::check_names;
use crate::safety::tools::ToolCatalog;

/// passepartout: a self-hosted assistant daemon.
#[derive(Debug, Parser)]
#[command(name = "passepartout", version = manual::VERSION, about)]
pub struct Cli {
    /// Configuration file (default: $PASSEPARTOUT_CONFIG, else ~/.config/passepartout/config.toml
    /// if it exists, else built-in defaults).
    #[arg(long, global = true, value_name = "FILE", env = "PASSEPARTOUT_CONFIG")]
    pub config: Option<PathBuf>,
    /// The running daemon's socket, for the client commands (default: the
    /// one the configuration names, in its data directory).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a working configuration file, step by step: the model (checked),
    /// the Telegram bot (checked) and its owner (the first person to write to
    /// it), and your own Signal account if you like (a QR code to scan).
    Setup(Box<crate::operator::setup::SetupArgs>),
    /// Run the daemon in the foreground until SIGINT or SIGTERM.
    Run,
    /// Talk to the assistant interactively; starts a daemon in-process if none is running.
    Chat {
        /// Conversation name (default: one per user).
        #[arg(long)]
        chat: Option<String>,
    },
    /// Send one message and print the reply.
    Send {
        /// Conversation name (default: one per user).
        #[arg(long)]
        chat: Option<String>,
        /// Give up after this many seconds, whatever the reply waits for (an
        /// approval too); without it, wait 330 s for the reply and, while it
        /// waits for an approval, as long as the approval stays open.
        #[arg(long, value_name = "SECONDS")]
        timeout_s: Option<u64>,
        /// Print the reply as it is written.
        #[arg(long)]
        stream: bool,
        /// The message; `-` reads it from standard input.
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Show what the running daemon is doing.
    Status {
        /// Print the status document as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the actions waiting for approval, approve or deny them, or list
    /// and revoke the standing rules ("always").
    Approvals {
        /// Every approval, decided ones too, and the audit trail.
        #[arg(long)]
        all: bool,
        /// Print the listing as JSON.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<ApprovalsCommand>,
    },
    /// Show the background loops (the heartbeat, …): state, iterations,
    /// errors; or stop one, start a stopped one again, or run one now.
    Loops {
        /// Print every loop's status as JSON.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        control: Option<LoopCommand>,
    },
    /// Let a new person in: list the pairing codes waiting, or approve one.
    Pair {
        #[command(subcommand)]
        command: pair::PairCommand,
    },
    /// List everyone allowed and every approver per gateway, with the source
    /// (config or paired); or revoke a paired person.
    Access {
        #[command(subcommand)]
        revoke: Option<pair::AccessCommand>,
    },
    /// List the people linked across channels, with their accounts; or take
    /// one apart.
    People {
        #[command(subcommand)]
        unlink: Option<people::PeopleCommand>,
    },
    /// Link this terminal with the channel that sent `/link` (name its code);
    /// with no code, print one to send as `/link CODE` from another channel.
    Link {
        /// The code `/link` answered on the other channel.
        code: Option<String>,
    },
    /// Print a one-time link that signs a browser in to the web dashboard
    /// (valid 5 minutes); or list or sign out the browsers signed in.
    Web {
        /// Open the link in this machine's browser as well.
        #[arg(long)]
        open: bool,
        #[command(subcommand)]
        command: Option<web::WebCommand>,
    },
    /// Your own Signal account: link the assistant to it as a device.
    Signal {
        #[command(subcommand)]
        command: crate::gateways::signal::cli::SignalCommand,
    },
    /// List the tools the model may use, each with its source (built in or
    /// an MCP server) and its gate (allowed, needs approval, denied).
    Tools {
        /// Print the listing as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make the running daemon read its configuration again (as SIGHUP
    /// does): who may talk and approve, the model providers, the system
    /// prompt, the skills and the configured loops apply at once; other
    /// changed settings are named, to apply at the next start.
    Reload,
    /// Print an example configuration documenting every setting, or the
    /// path of the file the commands read.
    Config {
        #[command(subcommand)]
        command: configuration::ConfigCommand,
    },
    /// Check the configuration and report every problem.
    CheckConfig {
        /// The file to check (default: --config, or the default file).
        file: Option<PathBuf>,
    },
    /// Check config, store, socket and model providers, one line each.
    Doctor,
    /// Rebuild the store from a verified backup (the newest unless named); the daemon must be stopped.
    Restore {
        /// The backup file (default: the newest in <data_dir>/backups).
        backup: Option<PathBuf>,
    },
    /// Print the shell completion script for SHELL (e.g. `passepartout completions bash > ~/.local/share/bash-completion/completions/passepartout`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `passepartout man | man -l -`.
    Man,
}

/// `passepartout approvals approve|deny|rules …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Approve the action with this token: it runs now, in its conversation.
    Approve {
        #[arg(required_unless_present = "all_from", conflicts_with = "all_from")]
        token: Option<String>,
        /// And let calls like it run in its conversation without asking,
        /// for approvals.rule_days (a standing rule).
        #[arg(long, requires = "token", conflicts_with = "all_from")]
        always: bool,
        /// Approve every action waiting in this conversation (gateway:chat,
        /// as the listing names it), each as if approved on its own.
        #[arg(long, value_name = "CONVERSATION")]
        all_from: Option<String>,
    },
    /// Deny the action with this token: it does not run.
    Deny {
        #[arg(required_unless_present_any = ["all", "all_from"], conflicts_with_all = ["all", "all_from"])]
        token: Option<String>,
        /// Deny every action waiting anywhere, each on its own.
        #[arg(long, conflicts_with = "all_from")]
        all: bool,
        /// Deny every action waiting in this conversation (gateway:chat).
        #[arg(long, value_name = "CONVERSATION")]
        all_from: Option<String>,
    },
    /// List the standing rules ("always"): one a line, its id first; or
    /// revoke one.
    Rules {
        /// Print the rules as JSON.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        revoke: Option<RulesCommand>,
    },
}

/// `passepartout approvals rules revoke ID`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Revoke the standing rule with this id: its calls ask again.
    Revoke { id: u64 },
}

/// `passepartout loops stop|start|run NAME`.
#[derive(Debug, Subcommand)]
pub enum LoopCommand {
    /// Stop the loop called NAME until `loops start NAME` (if the daemon
    /// restarts first, a configured loop comes back and one made in a chat
    /// is gone).
    Stop { name: String },
    /// Start the loop called NAME again, stopped with `loops stop`: it
    /// runs at its next time (`loops run NAME` runs it at once).
    Start { name: String },
    /// Run the loop called NAME now: a sleeping loop wakes early, one
    /// waiting for a trigger runs.
    Run { name: String },
}

/// The configuration file in effect: `--config`, else the default file if it exists.
pub fn config_file(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(config::default_config_file)
}

/// Loads the configuration, printing the problems if it is invalid.
pub fn load_config(explicit: Option<&Path>) -> Result<Config, ExitCode> {
    let file = config_file(explicit);
    load_checking_names(file.as_deref(), "passepartout").map_err(|error| {
        eprintln!("passepartout: {error}");
        ExitCode::from(2)
    })
}

/// The configuration a client command talks to the daemon with. A file
/// that does not load does not stop it — the daemon may well run on with
/// what it read before — so its data directory and socket are salvaged
/// (said once on stderr) and the problems handed back for the commands that
/// need more than the socket. `--socket` names the socket over either.
fn client_config(explicit: Option<&Path>, socket: Option<&Path>) -> (Config, Option<config::ConfigError>) {
    let file = config_file(explicit);
    let (mut config, problems) = match load_checking_names(file.as_deref(), "passepartout") {
        Ok(config) => (config, None),
        Err(error) => {
            let shown = file
                .as_ref()
                .map_or_else(|| "the configuration".to_owned(), |p| p.display().to_string());
            eprintln!(
                "passepartout: warning: {shown} has problems (`passepartout check-config` names them); \
                 using only its data directory and socket"
            );
            (config::salvage(file.as_deref(), None), Some(error))
        }
    };
    if let Some(socket) = socket {
        config.socket.path = Some(socket.to_path_buf());
    }
    (config, problems)
}

/// Loads and validates the configuration from `file`, with the tool and
/// argument names its gates give checked against the tools `run` registers
/// (the daemon checks them again at start, with any extensions); warnings
/// go to stderr, after `shown`.
fn load_checking_names(file: Option<&Path>, shown: &str) -> Result<Config, config::ConfigError> {
    let (loaded, warnings) = load_with_warnings(file);
    print_warnings(&warnings, shown);
    loaded
}

/// Like [`load_checking_names`], the warnings handed back rather than printed.
fn load_with_warnings(file: Option<&Path>) -> (Result<Config, config::ConfigError>, Vec<String>) {
    load_with(file, |_| Vec::new())
}

/// Like [`load_with_warnings`], with what would stop an enabled gateway
/// from starting (a token it cannot read) among the problems: what
/// `check-config` and `run` check, and the client commands do not.
fn load_to_start(file: Option<&Path>) -> (Result<Config, config::ConfigError>, Vec<String>) {
    load_with(file, |config| {
        crate::gateways::start_problems(config, |name| std::env::var(name).ok())
    })
}

/// Loads `file` with the names checked and the problems `more` finds added.
fn load_with(
    file: Option<&Path>,
    more: impl FnOnce(&Config) -> Vec<String>,
) -> (Result<Config, config::ConfigError>, Vec<String>) {
    let mut warnings = Vec::new();
    let loaded = config::load_checked(file, None, crate::gateways::problems, |config| {
        let catalog = ToolCatalog::registered(config, crate::engine::loops::tools::specs());
        let found = check_names(&config.skills, &config.tools, &catalog);
        warnings = [found.warnings, crate::gateways::warnings(config)].concat();
        [found.errors, more(config)].concat()
    });
    let loaded = loaded.map(|(config, from_environment)| {
        warnings.splice(0..0, from_environment);
        config
    });
    (loaded, warnings)
}

fn print_warnings(warnings: &[String], shown: &str) {
    for warning in warnings {
        eprintln!("{shown}: warning: {warning}");
    }
}

/// Runs the command line.
/// Runs the command line, each command on an async runtime of its own
/// making: the daemon's with the worker threads its configuration sets
/// (`[runtime]`), any other command's with the default.
pub fn main(cli: Cli) -> ExitCode {
    let Command::Run = cli.command else {
        return match runtime::build(&config::RuntimeConfig::default()) {
            Ok(runtime) => runtime.block_on(execute(cli)),
            Err(code) => code,
        };
    };
    let file = config_file(cli.config.as_deref());
    match load_to_start(file.as_deref()) {
        (Ok(config), warnings) => {
            // One live set for the log and the daemon, which adds what a
            // reload brings.
            let places = crate::gateways::secret_places(&config, &[]);
            let secrets = LiveSecrets::new(config::configured_secrets(&config, &places));
            let recent = logging::init("info", config.log.format, secrets.clone());
            // Logged, not printed: under `log.format = "json"` every line
            // the daemon writes is one a log shipper can read.
            for warning in warnings {
                tracing::warn!(%warning, "configuration");
            }
            match runtime::build(&config.runtime) {
                Ok(runtime) => runtime.block_on(run_daemon(config, file, recent, secrets)),
                Err(code) => code,
            }
        }
        (Err(error), warnings) => {
            print_warnings(&warnings, "passepartout");
            eprintln!("passepartout: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs a command other than `run`.
async fn execute(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Setup(args) => {
            logging::init("warn", config::LogFormat::Text, LiveSecrets::default());
            crate::operator::setup::run(*args, cli.config.as_deref()).await
        }
        Command::Completions { shell } => manual::completions(shell),
        Command::Man => manual::man_page(),
        Command::Config { command } => configuration::run(command, cli.config.as_deref()),
        // `chat` logs to a file of its own, not over the conversation.
        Command::Chat { chat } => {
            let (config, problems) = client_config(cli.config.as_deref(), cli.socket.as_deref());
            chat::run(config, problems, config_file(cli.config.as_deref()), chat).await
        }
        // Client commands only warn, so their output stays clean.
        Command::CheckConfig { file } => {
            logging::init("warn", config::LogFormat::Text, LiveSecrets::default());
            check_config(file.or(cli.config).as_deref())
        }
        // The daemon would refuse a file with problems whole: say so here.
        Command::Reload => {
            logging::init("warn", config::LogFormat::Text, LiveSecrets::default());
            match load_config(cli.config.as_deref()) {
                Ok(mut config) => {
                    if let Some(socket) = cli.socket {
                        config.socket.path = Some(socket);
                    }
                    reload::run(&config).await
                }
                Err(code) => {
                    eprintln!("passepartout: not reloaded; the running daemon keeps its configuration");
                    code
                }
            }
        }
        command => client_command(command, cli.config.as_deref(), cli.socket.as_deref()).await,
    }
}

/// Runs a client command, which asks the running daemon (or reads the
/// store, `restore`) with the configuration `explicit` names, its socket
/// at `socket` if given. It only warns, so that its output stays clean.
async fn client_command(command: Command, explicit: Option<&Path>, socket: Option<&Path>) -> ExitCode {
    logging::init("warn", config::LogFormat::Text, LiveSecrets::default());
    let (config, problems) = client_config(explicit, socket);
    match command {
        Command::Send {
            chat,
            timeout_s,
            stream,
            text,
        } => client::send(&config, chat, timeout_s, stream, &text).await,
        Command::Status { json } => client::status(&config, json).await,
        Command::Approvals { all, json, command } => approvals_command(&config, all, json, command).await,
        Command::Loops { json, control } => match control {
            None => loops::list(&config, json).await,
            Some(LoopCommand::Stop { name }) => loops::stop(&config, &name).await,
            Some(LoopCommand::Start { name }) => loops::start(&config, &name).await,
            Some(LoopCommand::Run { name }) => loops::run(&config, &name).await,
        },
        Command::Pair { command } => pair::pair(&config, command).await,
        Command::Access { revoke } => pair::access(&config, revoke).await,
        Command::People { unlink } => people::people(&config, unlink).await,
        Command::Link { code } => people::link(&config, code).await,
        Command::Web { open, command } => web::web(&config, command, open).await,
        Command::Tools { json } => tools::list(&config, json).await,
        // Both change files (the config, the store): never on a guess
        // of where they are.
        Command::Signal { .. } | Command::Restore { .. } if problems.is_some() => {
            if let Some(problems) = problems {
                eprintln!("passepartout: {problems}");
            }
            eprintln!("passepartout: fix the configuration first (`passepartout check-config` names each problem)");
            ExitCode::from(2)
        }
        Command::Signal { command } => {
            crate::gateways::signal::cli::run(&config, config_file(explicit).as_deref(), command).await
        }
        Command::Doctor => client::doctor(&config, config_file(explicit), problems).await,
        Command::Restore { backup } => restore::run(&config, backup).await,
        Command::Run
        | Command::Chat { .. }
        | Command::Setup(_)
        | Command::CheckConfig { .. }
        | Command::Config { .. }
        | Command::Reload
        | Command::Completions { .. }
        | Command::Man => {
            unreachable!("handled above, or by `main` (`run`)")
        }
    }
}

/// `passepartout approvals`: lists them, or decides one or a queue of
/// them, or lists or revokes the standing rules.
async fn approvals_command(config: &Config, all: bool, json: bool, command: Option<ApprovalsCommand>) -> ExitCode {
    match command {
        None => approvals::list(config, all, json).await,
        Some(ApprovalsCommand::Approve {
            token: Some(token),
            always,
            ..
        }) => approvals::decide(config, &token, true, always).await,
        Some(ApprovalsCommand::Approve { all_from, .. }) => {
            approvals::decide_all(config, true, all_from.as_deref()).await
        }
        Some(ApprovalsCommand::Deny { token: Some(token), .. }) => {
            approvals::decide(config, &token, false, false).await
        }
        Some(ApprovalsCommand::Deny { all_from, .. }) => {
            approvals::decide_all(config, false, all_from.as_deref()).await
        }
        Some(ApprovalsCommand::Rules { json, revoke: None }) => approvals::rules(config, json).await,
        Some(ApprovalsCommand::Rules {
            revoke: Some(RulesCommand::Revoke { id }),
            ..
        }) => approvals::revoke_rule(config, id).await,
    }
}

async fn run_daemon(config: Config, file: Option<PathBuf>, recent: Arc<RecentLogs>, secrets: LiveSecrets) -> ExitCode {
    let format = config.log.format;
    match crate::daemon::run(config, file, recent, secrets, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Said once, on stderr, where the logs go too: as a log line
            // for a log shipper to read, else as a sentence for a person.
            match format {
                config::LogFormat::Json => tracing::error!(error = format!("{error:#}"), "cannot run"),
                config::LogFormat::Text => eprintln!("passepartout: {error:#}"),
            }
            // Refused for its configuration: the exit code of a bad config.
            match error.downcast_ref::<StartError>() {
                Some(StartError::UnknownNames { .. } | StartError::Unstartable { .. }) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: a daemon logs that it is
/// ready before it waits on the future, and a SIGTERM in between (a
/// supervisor stopping it right away) must stop it cleanly rather than
/// kill it with the signal's default action.
pub fn shutdown_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    async move {
        match (term, interrupt) {
            (Ok(mut term), Ok(mut interrupt)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = term.recv() => {}
                }
            }
            (term, interrupt) => {
                let error = term
                    .err()
                    .or(interrupt.err())
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                tracing::warn!(%error, "cannot listen for SIGTERM and SIGINT; only Ctrl-C stops the daemon");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

fn check_config(file: Option<&Path>) -> ExitCode {
    let file = config_file(file);
    let shown = file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "built-in defaults".into());
    let (loaded, warnings) = load_to_start(file.as_deref());
    print_warnings(&warnings, &shown);
    match loaded {
        Ok(_) => {
            println!("ok: {shown}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{shown}: {error}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{ApprovalsCommand, Cli, Command, RulesCommand};

    fn approvals(args: &[&str]) -> Result<Option<ApprovalsCommand>, clap::Error> {
        let cli = Cli::try_parse_from(["passepartout", "approvals"].iter().chain(args))?;
        match cli.command {
            Command::Approvals { command, .. } => Ok(command),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn approvals_take_one_token_or_a_whole_queue_never_both() {
        assert!(matches!(
            approvals(&["approve", "K7PX2QMD", "--always"]),
            Ok(Some(ApprovalsCommand::Approve {
                token: Some(_),
                always: true,
                all_from: None
            }))
        ));
        assert!(matches!(
            approvals(&["approve", "--all-from", "telegram:42"]),
            Ok(Some(ApprovalsCommand::Approve {
                token: None,
                all_from: Some(_),
                ..
            }))
        ));
        assert!(matches!(
            approvals(&["deny", "--all"]),
            Ok(Some(ApprovalsCommand::Deny {
                token: None,
                all: true,
                ..
            }))
        ));
        assert!(matches!(
            approvals(&["rules", "revoke", "12"]),
            Ok(Some(ApprovalsCommand::Rules {
                revoke: Some(RulesCommand::Revoke { id: 12 }),
                ..
            }))
        ));
        for refused in [
            &["approve"][..],
            &["approve", "--all"],
            &["approve", "--always"],
            &["approve", "--always", "--all-from", "telegram:42"],
            &["approve", "K7PX2QMD", "--all-from", "telegram:42"],
            &["deny"],
            &["deny", "K7PX2QMD", "--all"],
            &["deny", "--all", "--all-from", "telegram:42"],
            &["rules", "revoke", "twelve"],
        ] {
            assert!(approvals(refused).is_err(), "{refused:?}");
        }
    }

    #[tokio::test]
    async fn a_sigterm_before_the_daemon_waits_for_it_is_a_clean_stop_not_a_kill() {
        let stopped = super::shutdown_signal();
        // The signal comes before the future is first polled, as it may
        // right after the daemon logged that it is ready. Without a handler
        // by then, its default action would end this test process.
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(20), stopped)
            .await
            .expect("the signal was caught");
    }
}
