//! Approval policy: the tools listed in `tools.require_approval` (by default
//! `shell`, `write_file` and `schedule`, which sets up a task the assistant
//! then runs by itself) run only after a person approves the exact call.
//! `SERVER__*` there names every tool of a tool server.

use std::collections::BTreeSet;

use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::model::signal::Origin;

pub struct ApprovalPolicy {
    tools: BTreeSet<String>,
}

impl ApprovalPolicy {
    pub fn new(tools: impl IntoIterator<Item = String>) -> Self {
        Self {
            tools: tools.into_iter().collect(),
        }
    }
}

impl Skill for ApprovalPolicy {
    fn name(&self) -> &str {
        "approval_policy"
    }

    fn priority(&self) -> i32 {
        priority::APPROVAL_POLICY
    }

    fn prompt(&self) -> Option<String> {
        if self.tools.is_empty() {
            return None;
        }
        let list: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        Some(format!(
            "These tools run only after a person approves the exact call: {}. Prefer the other tools when they do the job.",
            list.join(", ")
        ))
    }

    fn gate(&self, call: &ProposedCall, _: &Origin, _: Instant) -> Verdict {
        if self.tools.iter().any(|tool| super::rules::names(tool, &call.tool)) {
            Verdict::RequireApproval(format!("{} always needs a person's approval", call.tool))
        } else {
            Verdict::Allow
        }
    }
}
