//! What an access request is told: done or refused, with the words for
//! people; a change is told done only once it is on disk.

use passepartout_admin::AccessAnswer;

use crate::daemon::admin::AdminContext;

/// `message`, once what was written is on disk.
pub(super) async fn durable(admin: &AdminContext, message: String) -> AccessAnswer {
    match admin.store.durable().await {
        Ok(()) => done(message),
        Err(error) => refused(format!("the change could not be made durable: {error}")),
    }
}

/// Done, saying what was.
pub(super) fn done(message: String) -> AccessAnswer {
    AccessAnswer { ok: true, message }
}

/// Refused, saying why.
pub(super) fn refused(message: String) -> AccessAnswer {
    AccessAnswer { ok: false, message }
}

/// Refused, saying why (a pairing's or a link's error).
pub(super) fn refused_because(error: impl std::fmt::Display) -> AccessAnswer {
    refused(error.to_string())
}
