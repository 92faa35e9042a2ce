//! `passepartout approvals` (`--all`: every approval and the audit trail),
//! and the dashboard's Approvals page: [`AdminRequest::Approvals`](passepartout_admin::AdminRequest::Approvals).

use std::sync::Arc;

use passepartout_admin::{AdminReply, Unreadable};

use crate::daemon::admin::redacted::redacted;
use crate::daemon::admin::relative::with_relative_times;
use crate::daemon::admin::{AdminContext, Reply};

/// Answers the listing; it reads the whole approvals tree, so on a blocking
/// thread.
pub(super) fn answer(admin: &Arc<AdminContext>, all: bool, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn_blocking(move || {
        // An action's arguments and what ran may quote a secret.
        let listing = admin
            .approvals
            .listing(all)
            .map_err(Unreadable::because)
            .map(|mut listing| {
                redacted(&mut listing, &*admin.redact);
                with_relative_times(&mut listing, admin.clock.now_ms());
                listing
            });
        let _ = reply.send(AdminReply::Approvals(listing));
    });
}
