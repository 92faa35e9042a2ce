//! Tool allowlists: a conversation listed in `[[skills.allowlists]]` may use
//! only the tools named there — they are the only ones offered to the model,
//! and any other call is refused (`SERVER__*` names every tool of a tool
//! server). Conversations not listed are unrestricted.
//! (An entry that is not a valid `gateway:chat` restricts nothing;
//! `check-config` reports it.)

use std::collections::{BTreeSet, HashMap};

use passepartout_gateway::ConversationKey;
use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::config::AllowlistConfig;
use crate::model::signal::Origin;

pub struct ToolAllowlist {
    by_conversation: HashMap<ConversationKey, BTreeSet<String>>,
}

impl ToolAllowlist {
    pub fn new(lists: &[AllowlistConfig]) -> Self {
        let mut by_conversation: HashMap<ConversationKey, BTreeSet<String>> = HashMap::new();
        for list in lists {
            let Some(key) = list.conversation_key() else {
                continue;
            };
            by_conversation
                .entry(key)
                .or_default()
                .extend(list.tools.iter().cloned());
        }
        Self { by_conversation }
    }

    fn list(&self, origin: &Origin) -> Option<&BTreeSet<String>> {
        self.by_conversation.get(&origin.conversation)
    }
}

impl Skill for ToolAllowlist {
    fn name(&self) -> &str {
        "tool_allowlist"
    }

    fn priority(&self) -> i32 {
        priority::ALLOWLIST
    }

    fn limits_offer(&self) -> bool {
        true
    }

    fn triggered(&self, origin: &Origin) -> bool {
        self.list(origin).is_some()
    }

    fn gate(&self, call: &ProposedCall, origin: &Origin, _: Instant) -> Verdict {
        match self.list(origin) {
            Some(tools) if !tools.iter().any(|tool| super::rules::names(tool, &call.tool)) => Verdict::Reject(format!(
                "{} is not allowed in this conversation (allowed: {})",
                call.tool,
                tools.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
            )),
            _ => Verdict::Allow,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::safety::skills::tests::{origin, shell};
    use crate::safety::skills::{Decision, Skills};

    #[test]
    fn only_listed_tools_in_listed_conversations() {
        let list = ToolAllowlist::new(&[AllowlistConfig {
            conversation: "socket:kids".into(),
            tools: vec!["current_time".into()],
        }]);
        let skills = Skills::new(vec![Arc::new(list)]);
        assert!(matches!(
            skills.decide(shell("ls"), &origin("kids")),
            Decision::Reject { .. }
        ));
        assert!(matches!(skills.decide(shell("ls"), &origin("me")), Decision::Run(_)));
        assert!(skills.offers("current_time", &origin("kids")));
        assert!(!skills.offers("shell", &origin("kids")));
        assert!(skills.offers("shell", &origin("me")));
    }
}
