//! Linking the person's own Signal account, so that the assistant is one of
//! its devices and answers in their Note to Self (`passepartout signal link`).
//!
//! [`link`] reaches signal-cli as `[signal]` says, but in multi-account mode,
//! the only one that links: in spawn mode it starts `signal-cli [--config
//! DIR] jsonRpc` without `-a` for the while; otherwise it connects to the
//! daemon at `signal.endpoint`, which must have been started without `-a`.
//! It asks for a link URI (the signal crate's [`link`](passepartout_signal::link)
//! speaks the protocol), hands it to the caller to show ([`qr_block`] draws
//! it for a terminal), and waits for the phone. The settings to add follow
//! from the number ([`section_lines`]), or are written into the
//! configuration file ([`write_linked`]). The command line and a set-up
//! wizard both call these.

mod config_edit;
mod qr;

use std::time::Duration;

use passepartout_signal::link::{finish_link, start_link};
use passepartout_signal::{LinkError, Notification, RpcClient, RpcOptions, Transport};
pub use passepartout_signal::{LinkUri, Linked};
use thiserror::Error;

pub use config_edit::{EditError, TextError, linked_text, section_lines, write_linked};
pub use qr::{QrError, qr_block, qr_svg};

use super::{Signal, unreachable_message};
use crate::config::Config;

/// The device name the phone lists when none is given.
pub const DEFAULT_DEVICE_NAME: &str = "passepartout";
/// How long the phone has to link, unless told otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(180);
/// How long signal-cli may take to answer `startLink`: a child has to start
/// Java first.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a child started for linking may take to end afterwards.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the person is shown while their phone is to scan `uri`: the QR
/// code, what to do, the link as text, and how long it waits.
pub fn instructions(uri: &str, wait: Duration) -> String {
    let code = qr_block(uri).unwrap_or_else(|error| format!("({error})\n"));
    format!(
        "Link this assistant to your Signal account:\n\n{code}\n\
         On your phone, open Signal → Settings → Linked devices → Link new device, and scan the code.\n\
         The code holds this link (for another way to show it as a QR code):\n\n{uri}\n\n\
         Waiting up to {}s for your phone (Ctrl-C to stop)…\n",
        wait.as_secs()
    )
}

/// What to link as.
#[derive(Clone, Debug)]
pub struct LinkRequest {
    /// The name the phone shows under Linked devices.
    pub device_name: String,
    /// How long to wait for the phone.
    pub wait: Duration,
}

impl Default for LinkRequest {
    fn default() -> Self {
        Self {
            device_name: DEFAULT_DEVICE_NAME.to_owned(),
            wait: DEFAULT_WAIT,
        }
    }
}

/// Why linking failed, each with what to do.
#[derive(Debug, Error)]
pub enum LinkFailure {
    /// `[signal]` cannot say how to reach signal-cli.
    #[error("{0}")]
    Config(String),
    /// signal-cli could not be started, or its daemon reached.
    #[error("{0}")]
    Unreachable(String),
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Links the account whose phone scans the URI: `show` is handed the URI
/// as soon as signal-cli gave it; returns once the phone linked (or it
/// failed). Dropping the future stops waiting, and a signal-cli started for
/// it.
pub async fn link(config: &Config, request: &LinkRequest, show: impl FnOnce(&LinkUri)) -> Result<Linked, LinkFailure> {
    let mut settings = Signal::new(config).settings().map_err(LinkFailure::Config)?;
    // Only a signal-cli serving every account links a new one.
    settings.multi_account = true;
    let options = RpcOptions {
        call_timeout: START_TIMEOUT,
        ..RpcOptions::default()
    };
    let opened = match &settings.transport {
        Transport::Spawn(spawn) => RpcClient::spawn(spawn, None, options),
        Transport::Connect(endpoint) => RpcClient::connect(endpoint, options).await,
    };
    let (client, mut notifications) =
        opened.map_err(|error| LinkFailure::Unreachable(unreachable_message(&settings, &error)))?;
    let linked = async {
        let uri = start_link(&client).await?;
        show(&uri);
        finish_link(&client, &uri, &request.device_name, request.wait).await
    }
    .await;
    // A child started for this ends with its connection: wait until it has
    // (its account data written), which the connection's end tells.
    client.close();
    let ended = async { while !matches!(notifications.recv().await, None | Some(Notification::Lost(_))) {} };
    if tokio::time::timeout(CLOSE_TIMEOUT, ended).await.is_err() {
        tracing::warn!("signal-cli did not end in time after linking");
    }
    Ok(linked?)
}
