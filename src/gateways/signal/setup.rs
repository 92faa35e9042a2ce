//! The Signal step: on request (`--signal-link`, or a yes when asked), the
//! assistant is linked to the person's own Signal account as a new device —
//! a QR code to scan with their phone — and answers in their Note to Self.
//! signal-cli runs as the daemon's own child, or is the multi-account
//! daemon `--signal-endpoint` names. A link that fails can be left
//! for later (`passepartout signal link --write`) when asked; in a script
//! it stops the setup.

use std::time::Duration;

use async_trait::async_trait;
use clap::Args;
use passepartout_signal::config::DEFAULT_SIGNAL_SPAWN_PROGRAM;

use super::link::{self as signal_link, LinkRequest};
use super::section::{self, SignalReach};
use crate::config::Config;
use crate::config::interview::{Context, Only, Part, Place, SetupError, Step};

/// The Signal step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct SignalFlags {
    /// Link your own Signal account too (a QR code to scan with your phone);
    /// the assistant then answers what you write to Note to Self.
    /// Interactively, setup asks.
    #[arg(id = "signal_link", long = "signal-link")]
    pub link: bool,
    /// The signal-cli program the daemon starts for Signal.
    #[arg(id = "signal_cli", long = "signal-cli", value_name = "PROGRAM", default_value = DEFAULT_SIGNAL_SPAWN_PROGRAM)]
    pub cli: String,
    /// signal-cli's data folder (`--config`) for the program started: link
    /// into the folder the daemon's user will use (default: signal-cli's own,
    /// under the home of whoever runs setup).
    #[arg(
        id = "signal_config_dir",
        long = "signal-config-dir",
        value_name = "DIR",
        conflicts_with = "signal_endpoint"
    )]
    pub config_dir: Option<String>,
    /// Use the signal-cli daemon listening here (`tcp:HOST:PORT` or
    /// `unix:PATH`, started without `-a`) instead of starting signal-cli.
    #[arg(
        id = "signal_endpoint",
        long = "signal-endpoint",
        value_name = "ENDPOINT",
        conflicts_with = "signal_cli"
    )]
    pub endpoint: Option<String>,
    /// The name your phone lists the assistant under.
    #[arg(id = "signal_device", long = "signal-device", value_name = "DEVICE", default_value = signal_link::DEFAULT_DEVICE_NAME)]
    pub device: String,
    /// How long to wait for the phone to link, in seconds.
    #[arg(id = "signal_wait_s", long = "signal-wait-s", value_name = "SECONDS", default_value_t = signal_link::DEFAULT_WAIT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub wait_s: u64,
}

/// `[signal]`, for the person's own account, from its flags' answers or
/// the person's.
pub struct SignalStep {
    pub flags: SignalFlags,
}

#[async_trait(?Send)]
impl Step for SignalStep {
    fn only(&self) -> Only {
        Only {
            name: "signal",
            about: "Your own Signal account (`[signal]`)",
            place: Place::Table("signal"),
        }
    }

    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError> {
        // `--only signal` asked for it already.
        let wanted = self.flags.link
            || cx.only.is_some()
            || cx
                .input
                .yes(
                    "Link your own Signal account too (you need signal-cli and your phone)?",
                    false,
                )
                .await?;
        if !wanted {
            return Ok(Part::default());
        }
        loop {
            match self.link(cx).await {
                Ok(account) => {
                    cx.input.say(&format!(
                        "Linked: {account}. Write to your Note to Self to talk to the assistant."
                    ));
                    let reach = match &self.flags.endpoint {
                        Some(endpoint) => SignalReach::Endpoint(endpoint),
                        None => SignalReach::Spawn {
                            program: &self.flags.cli,
                            data: self.flags.config_dir.as_deref(),
                        },
                    };
                    return Ok(Part {
                        section: section::render(&account, reach),
                        ..Part::default()
                    });
                }
                Err(error) => {
                    cx.input.say(&format!("Signal was not linked: {error}"));
                    if !cx.input.interactive() {
                        return Err(SetupError::CheckFailed {
                            check: format!("Signal was not linked: {error}"),
                            hint: "run setup without --signal-link, then `passepartout signal link --write` later",
                        });
                    }
                    if !cx.input.yes("Try linking again?", false).await? {
                        cx.input
                            .say("Going on without Signal; `passepartout signal link --write` links it later.");
                        return Ok(Part::default());
                    }
                }
            }
        }
    }
}

impl SignalStep {
    /// Links through a signal-cli child, or the daemon at
    /// `--signal-endpoint`; the account's number.
    async fn link(&self, cx: &Context<'_>) -> Result<String, signal_link::LinkFailure> {
        let mut config = Config::default();
        match &self.flags.endpoint {
            Some(endpoint) => endpoint.clone_into(&mut config.signal.endpoint),
            None => {
                config.signal.spawn = true;
                config.signal.spawn_program = self.flags.cli.clone();
                config.signal.spawn_config_dir = self.flags.config_dir.clone();
            }
        }
        let request = LinkRequest {
            device_name: self.flags.device.clone(),
            wait: Duration::from_secs(self.flags.wait_s),
        };
        let input = &cx.input;
        let show = |uri: &signal_link::LinkUri| {
            input.say(signal_link::instructions(uri.as_str(), request.wait).trim_end());
        };
        let linked = signal_link::link(&config, &request, show).await?;
        Ok(linked.number)
    }
}
