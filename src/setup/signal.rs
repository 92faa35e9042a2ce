//! The Signal step: on request (`--signal-link`, or a yes when asked), the
//! assistant is linked to the person's own Signal account as a new device —
//! a QR code to scan with their phone — and answers in their Note to Self.
//! signal-cli runs as the daemon's own child, or is the multi-account
//! daemon `--signal-endpoint` names. A link that fails can be left
//! for later (`passepartout signal link --write`) when asked; in a script
//! it stops the setup.

use std::time::Duration;

use async_trait::async_trait;

use super::error::SetupError;
use super::only::{Only, Place};
use super::render::{self, SignalReach};
use super::{Context, Part, Step};
use crate::config::Config;
use crate::signal_link::{self, LinkRequest};

/// `[signal]`, for the person's own account.
pub struct SignalStep;

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
        let wanted = cx.args.signal_link
            || cx.args.only.is_some()
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
                    let reach = match &cx.args.signal_endpoint {
                        Some(endpoint) => SignalReach::Endpoint(endpoint),
                        None => SignalReach::Spawn {
                            program: &cx.args.signal_cli,
                            data: cx.args.signal_config_dir.as_deref(),
                        },
                    };
                    return Ok(Part {
                        section: render::signal(&account, reach),
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
        match &cx.args.signal_endpoint {
            Some(endpoint) => endpoint.clone_into(&mut config.signal.endpoint),
            None => {
                config.signal.spawn = true;
                config.signal.spawn_program = cx.args.signal_cli.clone();
                config.signal.spawn_config_dir = cx.args.signal_config_dir.clone();
            }
        }
        let request = LinkRequest {
            device_name: cx.args.signal_device.clone(),
            wait: Duration::from_secs(cx.args.signal_wait_s),
        };
        let input = &cx.input;
        let show = |uri: &passepartout_signal::LinkUri| {
            input.say(signal_link::instructions(uri.as_str(), request.wait).trim_end());
        };
        let linked = signal_link::link(&config, &request, show).await?;
        Ok(linked.number)
    }
}
