//! The receiving loop behind [`Listen::listen`](passepartout_gateway::Listen::listen).
//!
//! Over and over: connect to signal-cli (or start it, in spawn mode: a child
//! that exited is a lost connection like any other) and call
//! `subscribeReceive` (signal-cli runs with `--receive-mode=manual`, so it
//! fetches nothing from Signal while no one is subscribed, and nothing is
//! acknowledged to Signal while we are away); then take the `receive`
//! notifications one at a time, normalize each and submit it to the core,
//! taking the next only once the core answered. On a person's own account
//! only what the [`Admission`](crate::admission::Admission) lets through is
//! submitted, and never a reply of the gateway's own handed back into Note
//! to Self (see [`own_sends`](crate::own_sends)).
//! A `Busy` core gets the same message again after a pause: signal-cli will
//! not deliver it twice. A lost connection, or one that cannot be made, is
//! tried again after a jittered exponential backoff.
//!
//! On shutdown a message already handed to the core gets [`SUBMIT_GRACE`] to
//! be journaled: once signal-cli delivered it, nobody will deliver it again.
//! Then the loop unsubscribes, so that the daemon keeps further messages for
//! the next run instead of handing them to a connection nobody reads; the
//! connection itself stays for the deliveries of the drain.

use std::time::Duration;

use passepartout_gateway::retry::{Backoff, sleep_or_shutdown};
use passepartout_gateway::{Ack, GatewayError, Health, HealthState, Inbound, Intake, Refusal, unix_ms};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::RpcError;
use crate::gateway::SignalGateway;
use crate::message_id::parse;
use crate::normalize::{Normalized, normalize};
use crate::reply::plain_parts;
use crate::rpc::{Notification, Notifications, Received, RpcClient};

/// How long a message handed to the core may take to be acknowledged once
/// shutdown began.
pub const SUBMIT_GRACE: Duration = Duration::from_secs(5);
/// How long `unsubscribeReceive` may take when the loop ends.
const UNSUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How an attempt to connect and subscribe ended.
enum Opened {
    Shutdown,
    Failed(RpcError),
    /// The connection, its notifications and the subscription id.
    Subscribed(RpcClient, Notifications, Value),
}

/// How a session on one connection ended.
enum End {
    Shutdown,
    /// The core takes no more messages.
    IntakeClosed,
    Lost(RpcError),
}

impl SignalGateway {
    pub(crate) async fn run(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let mut backoff = Backoff::new(self.settings.backoff_base, self.settings.backoff_max);
        loop {
            let end = match self.open(&shutdown).await {
                Opened::Shutdown => return Ok(()),
                Opened::Failed(error) => End::Lost(error),
                Opened::Subscribed(client, mut notifications, subscription) => {
                    backoff.reset();
                    self.set_health(Health::up());
                    tracing::info!(signal_cli = %client.endpoint(), "Signal gateway receiving");
                    let end = self.session(&mut notifications, &intake, &shutdown).await;
                    if !matches!(end, End::Lost(_)) {
                        self.unsubscribe(&client, subscription).await;
                    }
                    end
                }
            };
            match end {
                End::Shutdown => return Ok(()),
                End::IntakeClosed if shutdown.is_cancelled() => return Ok(()),
                End::IntakeClosed => return Err(GatewayError::Closed),
                End::Lost(error) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(%error, retry_in_ms = delay.as_millis() as u64, "no connection to signal-cli");
                    self.set_health(Health::with(HealthState::Degraded, error.to_string()));
                    if sleep_or_shutdown(delay, &shutdown).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Connects and subscribes. A connection interrupted by shutdown while
    /// subscribing is closed: it may be subscribed, and nobody would read it.
    async fn open(&self, shutdown: &CancellationToken) -> Opened {
        let connected = tokio::select! {
            biased;
            () = shutdown.cancelled() => return Opened::Shutdown,
            connected = self.connect() => connected,
        };
        let (client, notifications) = match connected {
            Ok(connected) => connected,
            Err(error) => return Opened::Failed(error),
        };
        let subscribed = tokio::select! {
            biased;
            () = shutdown.cancelled() => {
                client.close();
                return Opened::Shutdown;
            }
            subscribed = client.call("subscribeReceive", self.params(json!({}))) => subscribed,
        };
        match subscribed {
            Ok(subscription) => {
                tracing::debug!(%subscription, "subscribed to signal-cli's messages");
                Opened::Subscribed(client, notifications, subscription)
            }
            Err(error) => {
                client.close();
                Opened::Failed(error)
            }
        }
    }

    /// Stops the daemon from handing this connection more messages, which
    /// nobody would read; the connection stays for deliveries. If the daemon
    /// does not confirm, the connection is closed instead.
    async fn unsubscribe(&self, client: &RpcClient, subscription: Value) {
        let params = self.params(json!({ "subscription": subscription }));
        if let Err(error) = client
            .call_with_timeout("unsubscribeReceive", params, UNSUBSCRIBE_TIMEOUT)
            .await
        {
            tracing::debug!(%error, "could not unsubscribe; closing the connection");
            client.close();
        }
    }

    /// Takes notifications until the connection or the loop ends.
    async fn session(&self, notifications: &mut Notifications, intake: &Intake, shutdown: &CancellationToken) -> End {
        loop {
            let notification = tokio::select! {
                biased;
                () = shutdown.cancelled() => return End::Shutdown,
                notification = notifications.recv() => notification,
            };
            match notification {
                Some(Notification::Receive(received)) => {
                    if let Some(end) = self.received(received, intake, shutdown).await {
                        return end;
                    }
                }
                Some(Notification::Other { method, .. }) => {
                    tracing::debug!(%method, "ignored a notification from signal-cli");
                }
                Some(Notification::Lost(error)) => return End::Lost(error),
                None => {
                    return End::Lost(RpcError::Closed {
                        reason: "the notification channel ended".to_owned(),
                    });
                }
            }
        }
    }

    async fn received(&self, received: Received, intake: &Intake, shutdown: &CancellationToken) -> Option<End> {
        if let Some(account) = &received.account
            && *account != self.settings.account
        {
            tracing::debug!(%account, "skipped an envelope for another account");
            return None;
        }
        match normalize(&received.envelope, &self.bot, &self.settings.groups, unix_ms()) {
            Normalized::Skip { reason } => {
                tracing::debug!(reason, timestamp = ?received.envelope.get("timestamp"), "skipped a Signal envelope");
                None
            }
            Normalized::Inbound(inbound) => match self.held_back(&inbound) {
                Some(reason) => {
                    tracing::debug!(reason, conversation = %inbound.conversation, "skipped a Signal message");
                    None
                }
                None => self.submit(*inbound, intake, shutdown).await,
            },
        }
    }

    /// Why `inbound` does not go to the core, if it does not: on a person's
    /// own account, a message of nobody listed (nothing at all is said to
    /// them), or the gateway's own reply handed back into Note to Self.
    fn held_back(&self, inbound: &Inbound) -> Option<&'static str> {
        if !self.admission.admits(inbound) {
            return Some("not Note to Self, nor from a listed sender or group, on a personal account");
        }
        let echoed = self.is_note_to_self(&inbound.conversation)
            && parse(&inbound.message_id).is_some_and(|id| self.own_sends.sent(id.timestamp));
        echoed.then_some("the assistant's own message, echoed back into Note to Self")
    }

    /// Submits one message until the core took it, and acts on its answer.
    async fn submit(&self, inbound: Inbound, intake: &Intake, shutdown: &CancellationToken) -> Option<End> {
        let ack = loop {
            let submit = intake.submit(inbound.clone());
            tokio::pin!(submit);
            let acked = tokio::select! {
                biased;
                acked = &mut submit => acked,
                () = shutdown.cancelled() => match tokio::time::timeout(SUBMIT_GRACE, &mut submit).await {
                    Ok(acked) => acked,
                    Err(_) => {
                        tracing::warn!(message_id = %inbound.message_id, "shut down before the core took a Signal message");
                        return Some(End::Shutdown);
                    }
                },
            };
            match acked {
                Err(_) => return Some(End::IntakeClosed),
                Ok(Ack::Busy) => {
                    tracing::debug!(message_id = %inbound.message_id, "the core is busy; submitting again shortly");
                    if sleep_or_shutdown(self.settings.busy_backoff, shutdown).await {
                        return Some(End::Shutdown);
                    }
                }
                Ok(ack) => break ack,
            }
        };
        let notice = match ack {
            Ack::Refused {
                reason: Refusal::NotAllowed,
            } => {
                tracing::info!(user = %inbound.sender.id, "refused a message from someone not allowed");
                (self.admission.tells_strangers()
                    && !self.settings.refusal.is_empty()
                    && self.refused.should_tell(&inbound.sender.id))
                .then_some((self.settings.refusal.as_str(), None))
            }
            Ack::Refused {
                reason: Refusal::Pairing,
            } => {
                tracing::info!(user = %inbound.sender.id, "someone not allowed was answered with how to pair");
                None
            }
            Ack::Refused {
                reason: Refusal::TooLarge,
            } => Some((self.settings.too_long.as_str(), Some(&inbound.message_id))),
            Ack::Refused {
                reason: Refusal::NotApprover,
            } => {
                tracing::info!(user = %inbound.sender.id, "an approval answer by someone who may not approve");
                None
            }
            Ack::Accepted | Ack::Duplicate | Ack::Busy => None,
        };
        if let Some((text, reply_to)) = notice
            && let Err(error) = self
                .send_text(
                    &inbound.conversation,
                    plain_parts(text, self.settings.text_limit),
                    reply_to,
                )
                .await
        {
            tracing::warn!(conversation = %inbound.conversation, %error, "could not send a notice");
        }
        None
    }
}
