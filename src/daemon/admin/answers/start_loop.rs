//! `passepartout loops start NAME`, and the dashboard's Start button:
//! [`AdminRequest::StartLoop`](passepartout_admin::AdminRequest::StartLoop).

use std::sync::Arc;

use super::loops::control;
use crate::daemon::admin::{AdminContext, Reply};
use crate::engine::loops::schedules::NextTime;
use crate::engine::loops::status::human;

/// Starts loop `name` again. Spawned, as a stop is: keeping a stored loop
/// again writes the store.
pub(super) fn answer(admin: &Arc<AdminContext>, name: String, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        // Read before: the next time is set from a later reading, so an
        // hour's sleep reads "1h0m", not "59m59s".
        let now_ms = admin.clock.now_ms();
        let started = admin.loops.start(&name).await;
        let answer = match started {
            Ok(next) => control(Ok(()), || started_message(&name, next, now_ms)),
            Err(error) => control(Err(error), String::new),
        };
        let _ = reply.send(answer);
    });
}

/// What starting loop `name` did: when it runs next (seen from `now_ms`).
fn started_message(name: &str, next: NextTime, now_ms: u64) -> String {
    match next {
        NextTime::At(at_ms) => format!(
            "loop \"{name}\" started; it runs next in {}",
            human(at_ms.saturating_sub(now_ms))
        ),
        NextTime::OnTrigger => format!("loop \"{name}\" started; it runs when triggered"),
    }
}
