//! `passepartout approvals rules`, and the standing rules on the
//! dashboard's Approvals page: [`AdminRequest::Rules`](passepartout_admin::AdminRequest::Rules).

use std::sync::Arc;

use passepartout_admin::{AdminReply, Unreadable};

use crate::daemon::admin::relative::with_relative_times;
use crate::daemon::admin::{AdminContext, Reply};

/// Answers the standing rules' listing; it reads the whole tree, so on a
/// blocking thread.
pub(super) fn answer(admin: &Arc<AdminContext>, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn_blocking(move || {
        let listing = admin
            .approvals
            .rules_listing()
            .map_err(Unreadable::because)
            .map(|mut listing| {
                with_relative_times(&mut listing, admin.clock.now_ms());
                listing
            });
        let _ = reply.send(AdminReply::Rules(listing));
    });
}
