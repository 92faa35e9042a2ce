//! The record forms the store keeps for the layers above it: an approval
//! (with the tool call it holds), a standing rule, an audit event, a
//! person let in by pairing and a person linked across channels. They live here, at the
//! floor, so the store persists only what it defines; `approvals`, `audit`
//! and `skills` re-export them and add what the records mean to a person.
//!
//! Their serde forms are the stored bytes: field names, tags and defaults
//! must not change, or existing stores stop opening.

mod approval;
mod audit;
mod call;
mod linked;
mod paired;
mod standing_rule;

pub use approval::{Approval, Approver, Decision, How, Names, Person, RunState, Status};
pub use audit::{AuditEvent, Audited, VoteOutcome};
pub use call::ProposedCall;
pub use linked::{Identity, LinkedPerson};
pub use paired::{PairedPerson, PendingPairing};
pub use standing_rule::{Scope, StandingRule};

#[cfg(test)]
#[path = "stored_forms_tests.rs"]
mod stored_forms_tests;
