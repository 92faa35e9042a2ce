//! Tool servers' calls: a tool offered as `SERVER__TOOL` comes from outside
//! the daemon, so each call needs a person's approval unless its server is
//! trusted (`trust = "allow"`) or a `[[skills.rules]]` allow rule, which runs
//! before this gate, lets it through. A call whose server prefix names no
//! configured server is not a tool server's and passes on.

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::config::{MCP_SEPARATOR, McpConfig, McpTrust};
use crate::model::signal::Origin;

pub struct McpApproval {
    /// Each configured server's trust, by name.
    servers: BTreeMap<String, McpTrust>,
}

impl McpApproval {
    pub fn new(config: &McpConfig) -> Self {
        Self {
            servers: config
                .servers
                .iter()
                .map(|server| (server.name.clone(), server.trust))
                .collect(),
        }
    }

    /// The server and the server's own tool name a call's tool is, if it is
    /// a configured server's.
    fn server_of<'a>(&self, tool: &'a str) -> Option<(&'a str, McpTrust)> {
        let (server, _) = tool.split_once(MCP_SEPARATOR)?;
        Some((server, *self.servers.get(server)?))
    }
}

impl Skill for McpApproval {
    fn name(&self) -> &str {
        "mcp_approval"
    }

    fn priority(&self) -> i32 {
        priority::APPROVAL_POLICY
    }

    fn gate(&self, call: &ProposedCall, _: &Origin, _: Instant) -> Verdict {
        match self.server_of(&call.tool) {
            Some((server, McpTrust::Ask)) => {
                Verdict::RequireApproval(format!("tools of the MCP server {server:?} need a person's approval"))
            }
            _ => Verdict::Allow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{McpServerConfig, RuleConfig, RuleVerdict, SkillsConfig, ToolsConfig};
    use crate::safety::skills::tests::origin;
    use crate::safety::skills::{Decision, Skills};

    fn server(name: &str, trust: McpTrust) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            command: Some("x".into()),
            trust,
            ..McpServerConfig::default()
        }
    }

    fn call(tool: &str) -> ProposedCall {
        ProposedCall {
            tool: tool.into(),
            arguments: serde_json::json!({"message": "hi"}),
        }
    }

    #[test]
    fn a_servers_calls_need_approval_unless_trusted_or_allowed_by_a_rule() {
        let mcp = McpConfig {
            servers: vec![server("everything", McpTrust::Ask), server("time", McpTrust::Allow)],
        };
        let skills = SkillsConfig {
            rules: vec![RuleConfig {
                tool: "everything__echo".into(),
                pattern: None,
                argument: None,
                verdict: RuleVerdict::Allow,
                reason: None,
            }],
            ..SkillsConfig::default()
        };
        let skills = Skills::from_config(&skills, &ToolsConfig::default(), &mcp).unwrap();
        assert!(matches!(
            skills.decide(call("everything__add"), &origin("c")),
            Decision::NeedsApproval { skill, reason, .. } if skill == "mcp_approval" && reason.contains("\"everything\"")
        ));
        assert!(matches!(
            skills.decide(call("everything__echo"), &origin("c")),
            Decision::Run(_)
        ));
        assert!(matches!(
            skills.decide(call("time__get_current_time"), &origin("c")),
            Decision::Run(_)
        ));
        assert!(matches!(
            skills.decide(call("current_time"), &origin("c")),
            Decision::Run(_)
        ));
    }

    #[test]
    fn a_rule_for_every_tool_of_a_server_allows_or_denies_them_all() {
        let mcp = McpConfig {
            servers: vec![server("everything", McpTrust::Ask), server("files", McpTrust::Allow)],
        };
        let rule = |tool: &str, verdict| RuleConfig {
            tool: tool.into(),
            pattern: None,
            argument: None,
            verdict,
            reason: None,
        };
        let skills = SkillsConfig {
            rules: vec![
                rule("everything__*", RuleVerdict::Allow),
                rule("files__*", RuleVerdict::Deny),
            ],
            ..SkillsConfig::default()
        };
        let skills = Skills::from_config(&skills, &ToolsConfig::default(), &mcp).unwrap();
        assert!(matches!(
            skills.decide(call("everything__add"), &origin("c")),
            Decision::Run(_)
        ));
        assert!(matches!(
            skills.decide(call("files__write_file"), &origin("c")),
            Decision::Reject { .. }
        ));
        assert!(
            matches!(skills.decide(call("everythingelse__x"), &origin("c")), Decision::Run(_)),
            "not a configured server, and not matched by the other's pattern"
        );
    }
}
