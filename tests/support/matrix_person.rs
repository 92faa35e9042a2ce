//! A person's own client on matrix-sdk, for what matrix-nio cannot do:
//! verify a device by emoji as Element does. Element asks with a
//! verification request, the other side answers it ready, then Element
//! starts the emoji comparison; matrix-nio knows only the older flow that
//! starts at once, and computes that flow's commitment in a form current
//! clients refuse.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::OwnedUserId;
use matrix_sdk::ruma::events::room::member::MembershipState;
use matrix_sdk::ruma::events::room::message::{OriginalSyncRoomMessageEvent, RoomMessageEventContent};

use super::synapse::User;

/// How long each step of a verification may take.
const STEP: Duration = Duration::from_secs(120);

/// `person` verifies the only device of `other` by emoji, after a hello
/// in a direct chat it opens with them (encrypted, so that each knows the
/// other's devices), and confirms the emojis; their descriptions, in order, once both sides
/// confirmed and `then` ended. The person's client syncs until then: its
/// last message of the verification is sent by its sync, and a client that
/// stopped at once could leave the other side waiting for it.
pub async fn verify_by_emoji(
    homeserver: &str,
    person: &User,
    other: &str,
    then: impl Future<Output = ()>,
) -> Vec<String> {
    let client = Client::builder()
        .homeserver_url(homeserver)
        .build()
        .await
        .expect("a client for the person");
    client
        .matrix_auth()
        .login_username(person.id.as_str(), &person.password)
        .initial_device_display_name("the person's own client")
        .await
        .expect("the person logs in");
    // Synced all along, beside the steps (in this task: the SDK's sync
    // future is too deep a type for a spawned task's `Send` check).
    let sync = client.sync(SyncSettings::default().timeout(Duration::from_secs(1)));
    let steps = async {
        let other = OwnedUserId::try_from(other).expect("a user id");
        let room = client.create_dm(&other).await.expect("a direct chat with them");
        // Once they answered, encrypted, they know this device: a request
        // from a device they do not know yet would be ignored.
        let answered = Arc::new(AtomicBool::new(false));
        let heard = (answered.clone(), other.clone());
        client.add_event_handler(move |event: OriginalSyncRoomMessageEvent| {
            let (answered, other) = heard.clone();
            async move {
                if event.sender == other {
                    answered.store(true, Ordering::SeqCst);
                }
            }
        });
        until("they join the direct chat", || async {
            let joined = room.get_member_no_sync(&other).await.ok()??;
            (*joined.membership() == MembershipState::Join).then_some(())
        })
        .await;
        room.send(RoomMessageEventContent::text_plain("hello"))
            .await
            .expect("the person says hello");
        until("they answer", || async {
            answered.load(Ordering::SeqCst).then_some(())
        })
        .await;
        let encryption = client.encryption();
        let device = until("their device is known", || async {
            let devices = encryption.get_user_devices(&other).await.ok()?;
            devices.devices().next()
        })
        .await;
        let request = device.request_verification().await.expect("a verification request");
        until("they answer the request", || async { request.is_ready().then_some(()) }).await;
        let sas = request
            .start_sas()
            .await
            .expect("the emoji comparison starts")
            .expect("they take emojis");
        let emojis = until("the emojis can be shown", || async { sas.emoji() }).await;
        sas.confirm().await.expect("the person confirms");
        until("both sides confirmed", || async {
            assert!(
                !sas.is_cancelled(),
                "the verification was cancelled: {:?}",
                sas.cancel_info()
            );
            sas.is_done().then_some(())
        })
        .await;
        then.await;
        emojis.iter().map(|emoji| emoji.description.to_owned()).collect()
    };
    tokio::select! {
        emojis = steps => emojis,
        ended = sync => panic!("the person's sync ended: {ended:?}"),
    }
}

/// Asks `check` until it gives something, every 50 ms for at most [`STEP`];
/// fails the test naming `what` otherwise.
async fn until<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "not within {STEP:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
