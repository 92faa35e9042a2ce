//! The safety desks: everything between what the model proposes and what
//! runs. The deterministic [`skills`] every proposed call passes, the
//! [`approvals`] desk where a risky action waits for a person, the
//! [`tools`] themselves, the [`sandbox`] each tool process runs confined
//! in, and the tool servers of [`mcp`].

pub mod approvals;
pub mod mcp;
pub mod sandbox;
pub mod skills;
pub mod tools;
