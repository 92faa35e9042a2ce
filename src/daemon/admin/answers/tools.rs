//! `passepartout tools`, and the tools on the dashboard's Loops page:
//! [`AdminRequest::Tools`](passepartout_admin::AdminRequest::Tools).

use passepartout_admin::{AdminReply, Asker};
use passepartout_gateway::MessageId;

use crate::daemon::admin::{AdminContext, Reply};

/// The tools offered in the asker's conversation, each with its source and
/// the gate it passes there, as the asker would meet them.
pub(super) fn answer(admin: &AdminContext, asker: Asker, reply: Reply) {
    let origin = crate::model::signal::Origin {
        conversation: asker.conversation,
        sender: asker.by,
        message_id: MessageId::new("tools").expect("a valid message id"),
        sender_names: Default::default(),
    };
    let lines = (admin.tools)().lines(&origin);
    let _ = reply.send(AdminReply::Tools(serde_json::to_value(lines).unwrap_or_default()));
}
