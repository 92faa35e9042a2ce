//! The local socket as a gateway component: bound from `[socket]` at
//! [`Config::socket_path`], open to the daemon's own user only (the gateway
//! checks every peer's uid), who therefore may talk and approve everything.
//! Its `doctor` check is the CLI's own way in: it reaches the running daemon
//! and has it probe its model providers again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{Draft, GatewayId};
use passepartout_socket::{AdminRequest, Client, ClientError, GATEWAY_ID, SocketConfig, SocketGateway, SocketSection};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, SecretPlaces, Upload};
use crate::config::Config;
use crate::foundation::checkup::{Check, Level};

/// Room left in a line for a message frame's JSON beside its text.
const FRAME_OVERHEAD: usize = 1024;

/// How long `doctor` waits to connect.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// `[socket]` and where the socket lives.
pub struct Socket {
    section: SocketSection,
    path: PathBuf,
    /// How long `doctor` waits for the daemon to probe every provider.
    recheck_limit: Duration,
    /// The longest message the intake takes.
    max_message_bytes: usize,
}

impl Socket {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.socket.clone(),
            path: config.socket_path(),
            recheck_limit: recheck_limit(config),
            max_message_bytes: config.pipeline.max_message_bytes,
        }
    }
}

#[async_trait]
impl GatewayComponent for Socket {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("the socket's gateway id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
    }

    /// None of its own: its key is in the data directory, which the
    /// sandbox keeps out of reach whole.
    fn secrets(&self) -> SecretPlaces {
        SecretPlaces::default()
    }

    fn name(&self) -> String {
        "the terminal".to_owned()
    }

    fn handoff_word(&self) -> String {
        "terminal".to_owned()
    }

    fn talkers(&self) -> Roster {
        Roster::Everyone
    }

    fn deciders(&self) -> Roster {
        Roster::Everyone
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_socket::SURFACE
    }

    fn problems(&self) -> Vec<String> {
        self.section.problems()
    }

    /// Its client runs on this machine and reads the file where it is.
    fn upload(&self) -> Upload {
        Upload {
            copied: false,
            ..Upload::default()
        }
    }

    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError> {
        let config = SocketConfig {
            path: self.path.clone(),
            max_line_bytes: self.section.max_line_bytes,
            max_clients: self.section.max_clients,
            // A message must fit a line too, with its frame around it.
            max_message_bytes: Some(
                self.max_message_bytes
                    .min(self.section.max_line_bytes.saturating_sub(FRAME_OVERHEAD)),
            ),
        };
        let socket = SocketGateway::bind(config, with.admin.clone())
            .await
            .map_err(|error| BuildError::new("socket", error))?;
        Ok(Built {
            local_path: Some(socket.path().to_path_buf()),
            listen: socket.clone(),
            draft: self
                .section
                .stream
                .unwrap_or(with.stream)
                .then(|| socket.clone() as Arc<dyn Draft>),
            deliver: socket,
            // A local client sends text; a file it means is already on this machine.
            fetch: None,
        })
    }

    async fn check(&self) -> Option<Checked> {
        if !self.section.enabled {
            return Some(Check::new("socket", Level::Ok, "disabled in the configuration", None).into());
        }
        let path = &self.path;
        Some(
            match tokio::time::timeout(CONNECT_LIMIT, Client::connect(path, None)).await {
                Ok(Ok(mut client)) => {
                    let check = Check::new(
                        "socket",
                        Level::Ok,
                        format!("daemon answering at {}", path.display()),
                        None,
                    );
                    // The daemon probes with its own keys, and a provider that
                    // answers is healthy again there.
                    let daemon = tokio::time::timeout(self.recheck_limit, client.ask(AdminRequest::Recheck))
                        .await
                        .ok()
                        .and_then(Result::ok);
                    Checked { check, daemon }
                }
                Ok(Err(ClientError::NotRunning { .. })) => Check::new(
                    "socket",
                    Level::Degraded,
                    format!("no daemon listening at {}", path.display()),
                    Some("start it with `passepartout run`".into()),
                )
                .into(),
                Ok(Err(error)) => Check::new(
                    "socket",
                    Level::Failed,
                    error.to_string(),
                    Some("check the daemon's log".into()),
                )
                .into(),
                Err(_) => Check::new(
                    "socket",
                    Level::Failed,
                    format!("{} did not answer within 5 s", path.display()),
                    Some("the daemon may be stuck; check its log".into()),
                )
                .into(),
            },
        )
    }
}

/// Long enough for the daemon to probe every provider in turn.
fn recheck_limit(config: &Config) -> Duration {
    let each: u64 = config
        .llm
        .providers
        .iter()
        .map(|p| p.timeout_s + p.connect_timeout_s)
        .sum();
    Duration::from_secs(each + 5)
}
