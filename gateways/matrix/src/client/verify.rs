//! Verifying the assistant's device by emoji, as Element offers: a person
//! allowed to talk to it asks (from their own device, or in a direct chat
//! with it), the assistant accepts, and once the keys are exchanged it logs
//! the seven emojis (the daemon's log is the channel no homeserver can
//! touch: compare them there, or on the dashboard's Logs page) and
//! confirms its side. The person confirms theirs in their client when the emojis match;
//! that is the check that matters, since it is their client that then
//! trusts the assistant's device. The assistant's confirmation only marks
//! the person's device as verified in its own store, and it sends to
//! unverified devices anyway; requests from anyone else are ignored.

use std::sync::Arc;

use futures_util::StreamExt;
use matrix_sdk::Client;
use matrix_sdk::encryption::verification::{SasState, SasVerification, Verification};
use matrix_sdk::ruma::UserId;
use matrix_sdk::ruma::events::key::verification::request::ToDeviceKeyVerificationRequestEvent;
use matrix_sdk::ruma::events::key::verification::start::{
    OriginalSyncKeyVerificationStartEvent, ToDeviceKeyVerificationStartEvent,
};
use matrix_sdk::ruma::events::room::message::{MessageType, OriginalSyncRoomMessageEvent};

/// Who may verify the assistant's device.
type Allowed = Arc<Vec<String>>;

/// Answers the verifications the people in `allowed` start, from now on.
pub fn answer(client: &Client, allowed: Vec<String>) {
    let allowed: Allowed = Arc::new(allowed);
    let who = allowed.clone();
    client.add_event_handler(move |event: ToDeviceKeyVerificationRequestEvent, client: Client| {
        let who = who.clone();
        async move {
            accept_request(&client, &who, &event.sender, event.content.transaction_id.as_str()).await;
        }
    });
    let who = allowed.clone();
    client.add_event_handler(move |event: OriginalSyncRoomMessageEvent, client: Client| {
        let who = who.clone();
        async move {
            if let MessageType::VerificationRequest(_) = &event.content.msgtype {
                accept_request(&client, &who, &event.sender, event.event_id.as_str()).await;
            }
        }
    });
    let who = allowed.clone();
    client.add_event_handler(move |event: ToDeviceKeyVerificationStartEvent, client: Client| {
        let who = who.clone();
        async move {
            start(&client, &who, &event.sender, event.content.transaction_id.as_str()).await;
        }
    });
    client.add_event_handler(move |event: OriginalSyncKeyVerificationStartEvent, client: Client| {
        let who = allowed.clone();
        async move {
            start(&client, &who, &event.sender, event.content.relates_to.event_id.as_str()).await;
        }
    });
}

fn may_verify(allowed: &Allowed, user: &UserId) -> bool {
    allowed.iter().any(|id| id == user.as_str())
}

/// Accepts the verification request `flow` of `user`'s, if they may ask.
async fn accept_request(client: &Client, allowed: &Allowed, user: &UserId, flow: &str) {
    if !may_verify(allowed, user) {
        tracing::info!(%user, "a verification request from someone not allowed is ignored");
        return;
    }
    let Some(request) = client.encryption().get_verification_request(user, flow).await else {
        return;
    };
    if let Err(error) = request.accept().await {
        tracing::warn!(%user, %error, "a verification request could not be accepted");
    }
}

/// Takes up the emoji verification `flow` that `user` started.
async fn start(client: &Client, allowed: &Allowed, user: &UserId, flow: &str) {
    if !may_verify(allowed, user) {
        return;
    }
    if let Some(Verification::SasV1(sas)) = client.encryption().get_verification(user, flow).await {
        tokio::spawn(compare(sas));
    }
}

/// Accepts `sas`, shows its emojis once the keys are exchanged, confirms,
/// and says how it ended.
async fn compare(sas: SasVerification) {
    let user = sas.other_user_id().to_owned();
    let device = sas.other_device().device_id().to_owned();
    let mut changes = sas.changes();
    if let Err(error) = sas.accept().await {
        tracing::warn!(%user, %error, "an emoji verification could not be accepted");
        return;
    }
    while let Some(state) = changes.next().await {
        match state {
            SasState::KeysExchanged { emojis, decimals } => {
                let shown = match emojis {
                    Some(emojis) => (emojis.emojis.iter())
                        .map(|emoji| format!("{} {}", emoji.symbol, emoji.description))
                        .collect::<Vec<_>>()
                        .join(", "),
                    None => format!("{} {} {}", decimals.0, decimals.1, decimals.2),
                };
                tracing::info!(
                    %user, %device, emojis = %shown,
                    "verifying the assistant's device: confirm in your client if it shows these, in this order"
                );
                if let Err(error) = sas.confirm().await {
                    tracing::warn!(%user, %error, "an emoji verification could not be confirmed");
                    return;
                }
            }
            SasState::Done { .. } => {
                tracing::info!(%user, %device, "the assistant's device is verified");
                return;
            }
            SasState::Cancelled(info) => {
                tracing::info!(%user, reason = info.reason(), "an emoji verification was cancelled");
                return;
            }
            _ => {}
        }
    }
}
