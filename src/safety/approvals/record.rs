//! An approval's record. Its form is the store's (`store::records`), so the
//! store persists nothing defined above it; here it gets what the desk shows
//! people about it.

use passepartout_gateway::markup::code;

pub use crate::store::{Approval, Approver, Decision, How, Person, RunState, Status};

impl Approval {
    /// What a decided prompt is edited to show, as Markdown: the action
    /// and its outcome.
    pub fn decided_text(&self) -> String {
        let by = self
            .decision
            .as_ref()
            .and_then(crate::people::decided_by)
            .map(|by| format!(" {by}"))
            .unwrap_or_default();
        let outcome = match self.status {
            Status::Pending => "Waiting for approval".to_owned(),
            Status::Expired => "Timed out: nobody answered; it did not run".to_owned(),
            Status::Approved => format!("Approved{by}"),
            Status::Denied => format!("Denied{by}; it did not run"),
            Status::Cancelled => format!("Cancelled{by}; it did not run"),
        };
        format!("{} ({})\n{outcome}.", code(&self.action()), code(self.token.as_str()))
    }
}
