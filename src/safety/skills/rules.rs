//! Declarative rules from `[[skills.rules]]`: when a tool is called and a
//! pattern matches one of its string arguments (or the whole arguments object
//! as JSON text), deny, require approval, or allow. A rule names one tool,
//! every tool (`*`), or every tool of a tool server (`SERVER__*`). The first matching rule
//! decides; a call no rule matches passes on to the next gate.
//!
//! Deny and require-approval patterns are searched anywhere (and ignore
//! case), so they err towards catching. An allow pattern must match the
//! *whole* value, and never matches a shell command that chains or
//! substitutes (`;`, `&`, `|`, `$`, a backtick, `<`, `>`, parentheses, a
//! newline): `git status` must not let `git status; curl … | sh` through.

use regex::{Regex, RegexBuilder};
use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::config::{MCP_SEPARATOR, RuleConfig, RuleVerdict};
use crate::model::signal::Origin;

/// One compiled rule.
pub struct Rule {
    tool: String,
    pattern: Option<Regex>,
    argument: Option<String>,
    verdict: RuleVerdict,
    reason: String,
}

impl Rule {
    pub fn new(config: &RuleConfig) -> Result<Self, regex::Error> {
        let pattern = match (config.pattern.as_deref(), config.verdict) {
            (None, _) => None,
            (Some(pattern), RuleVerdict::Allow) => Some(Regex::new(&format!("^(?:{pattern})$"))?),
            (Some(pattern), _) => Some(RegexBuilder::new(pattern).case_insensitive(true).build()?),
        };
        let reason = config.reason.clone().unwrap_or_else(|| {
            let on = config.pattern.as_deref().unwrap_or("any arguments");
            format!("a configured rule for {} ({on})", config.tool)
        });
        Ok(Self {
            tool: config.tool.clone(),
            pattern,
            argument: config.argument.clone(),
            verdict: config.verdict,
            reason,
        })
    }

    fn matches(&self, call: &ProposedCall) -> bool {
        if !names(&self.tool, &call.tool) {
            return false;
        }
        if self.verdict == RuleVerdict::Allow && call.tool == "shell" && chains(call.string_argument("command")) {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        match &self.argument {
            Some(name) => call.string_argument(name).is_some_and(|value| pattern.is_match(value)),
            None => pattern.is_match(&call.arguments.to_string()),
        }
    }
}

/// Whether a rule's `tool` names `tool`: exactly, as `*`, or as `SERVER__*`
/// for every tool of that server.
pub fn names(rule_tool: &str, tool: &str) -> bool {
    match rule_tool.strip_suffix('*') {
        Some("") => true,
        Some(server) if server.ends_with(MCP_SEPARATOR) => tool.starts_with(server),
        _ => rule_tool == tool,
    }
}

/// Whether a shell command line does more than run one program.
fn chains(command: Option<&str>) -> bool {
    command.is_some_and(|command| command.contains([';', '&', '|', '$', '`', '<', '>', '(', ')', '\n']))
}

pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub fn new(configs: &[RuleConfig]) -> Result<Self, regex::Error> {
        Ok(Self {
            rules: configs.iter().map(Rule::new).collect::<Result<_, _>>()?,
        })
    }
}

impl Skill for Rules {
    fn name(&self) -> &str {
        "rules"
    }

    fn priority(&self) -> i32 {
        priority::RULES
    }

    fn gate(&self, call: &ProposedCall, _: &Origin, _: Instant) -> Verdict {
        match self.rules.iter().find(|rule| rule.matches(call)) {
            None => Verdict::Allow,
            Some(rule) => match rule.verdict {
                RuleVerdict::Deny => Verdict::Reject(rule.reason.clone()),
                RuleVerdict::RequireApproval => Verdict::RequireApproval(rule.reason.clone()),
                RuleVerdict::Allow => Verdict::Permit,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SkillsConfig, ToolsConfig};
    use crate::safety::skills::tests::{origin, shell};
    use crate::safety::skills::{Decision, Skills};

    fn rule(tool: &str, pattern: Option<&str>, argument: Option<&str>, verdict: RuleVerdict) -> RuleConfig {
        RuleConfig {
            tool: tool.into(),
            pattern: pattern.map(Into::into),
            argument: argument.map(Into::into),
            verdict,
            reason: None,
        }
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let skills = SkillsConfig {
            rules: vec![
                rule(
                    "shell",
                    Some(r"git (status|log)( --short)?"),
                    Some("command"),
                    RuleVerdict::Allow,
                ),
                rule("shell", Some(r"\bcurl\b"), Some("command"), RuleVerdict::Deny),
                rule("http_get", Some("example"), None, RuleVerdict::RequireApproval),
            ],
            ..SkillsConfig::default()
        };
        let skills = Skills::from_config(&skills, &ToolsConfig::default(), &Default::default()).unwrap();
        assert!(
            matches!(skills.decide(shell("git status"), &origin("c")), Decision::Run(_)),
            "allow skips the approval policy"
        );
        assert!(
            matches!(skills.decide(shell("curl x | sh"), &origin("c")), Decision::Reject { skill, .. } if skill == "rules")
        );
        assert!(
            matches!(skills.decide(shell("CURL x"), &origin("c")), Decision::Reject { .. }),
            "deny ignores case"
        );
        for chained in [
            "git status; ls",
            "git log $(id)",
            "git status > x",
            "git status\nls",
            "git status -v",
        ] {
            assert!(
                matches!(
                    skills.decide(shell(chained), &origin("c")),
                    Decision::NeedsApproval { .. }
                ),
                "an allow rule matches whole, unchained commands only: {chained}"
            );
        }
        assert!(
            matches!(skills.decide(shell("git status; rm -rf /"), &origin("c")), Decision::Reject { skill, .. } if skill == "shell_safety"),
            "an allow rule never overrides shell safety"
        );
        let get = ProposedCall {
            tool: "http_get".into(),
            arguments: serde_json::json!({"url": "https://example.org"}),
        };
        assert!(matches!(
            skills.decide(get, &origin("c")),
            Decision::NeedsApproval { .. }
        ));
    }
}
