//! The tools a conversation's model may call, each with where it comes from
//! (built in, or which MCP server) and what the gates say of it in general:
//! allowed, needs approval, or denied. `/tools` in a chat shows it for that
//! chat; `passepartout tools` for the local user's, through the admin path.
//! One document, one rendering.

use passepartout_gateway::markup::{code, escape};
use serde::{Deserialize, Serialize};

use crate::model::signal::Origin;
use crate::safety::skills::{Skills, Standing};
use crate::safety::tools::{SET_NEXT_SLEEP, ToolBox};

/// One tool's line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolLine {
    pub name: String,
    /// `built-in`, or `mcp:SERVER`.
    pub source: String,
    /// `allowed`, `needs approval` or `denied`.
    pub gate: String,
    /// Why, when not simply allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The tools and the gates, as a conversation sees them.
#[derive(Clone)]
pub struct ToolList {
    pub tools: ToolBox,
    pub skills: Skills,
}

impl ToolList {
    /// Every tool offered in `origin`'s conversation (outside a loop), in
    /// the order offered, with its gate.
    pub fn lines(&self, origin: &Origin) -> Vec<ToolLine> {
        self.tools
            .all()
            .iter()
            .map(|tool| (tool.spec().name, tool.server().map(str::to_owned)))
            .filter(|(name, _)| name != SET_NEXT_SLEEP && self.skills.offers(name, origin))
            .map(|(name, server)| {
                let (gate, reason) = match self.skills.standing(&name, origin) {
                    Standing::Allowed => ("allowed", None),
                    Standing::NeedsApproval(reason) => ("needs approval", Some(reason)),
                    Standing::Denied(reason) => ("denied", Some(reason)),
                };
                ToolLine {
                    source: server.map_or_else(|| "built-in".to_owned(), |server| format!("mcp:{server}")),
                    name,
                    gate: gate.to_owned(),
                    reason,
                }
            })
            .collect()
    }
}

/// The listing as an aligned table, for a terminal (`passepartout tools`).
pub fn table(lines: &[ToolLine]) -> String {
    if lines.is_empty() {
        return "No tools are offered here.".to_owned();
    }
    let width = lines.iter().map(|line| line.name.len()).max().unwrap_or(0);
    let mut text = format!("Tools ({}):", lines.len());
    for line in lines {
        text += &*format!("\n{:<width$}  {:<14} {}", line.name, line.source, line.gate);
    }
    text
}

/// The listing as Markdown, one tool a line (no columns: a chat's font
/// is proportional).
pub fn render(lines: &[ToolLine]) -> String {
    if lines.is_empty() {
        return "No tools are offered here.".to_owned();
    }
    let mut text = format!("**Tools** ({}):", lines.len());
    for line in lines {
        text += &*format!(
            "\n• {} — {}, {}",
            code(&line.name),
            escape(&line.source),
            escape(&line.gate)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::{McpConfig, SkillsConfig, ToolsConfig};
    use crate::safety::skills::tests::origin;
    use crate::safety::tools::{CurrentTime, Tool};

    #[test]
    fn each_tool_has_its_source_and_gate() {
        let tools = ToolBox::new([Arc::new(CurrentTime) as Arc<dyn Tool>]);
        let tools_config = ToolsConfig {
            require_approval: vec!["current_time".into()],
            ..ToolsConfig::default()
        };
        let skills = Skills::from_config(&SkillsConfig::default(), &tools_config, &McpConfig::default()).unwrap();
        let list = ToolList { tools, skills };
        let lines = list.lines(&origin("c"));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].source, "built-in");
        assert_eq!(lines[0].gate, "needs approval");
        assert_eq!(table(&lines), "Tools (1):\ncurrent_time  built-in       needs approval");
        assert_eq!(
            render(&lines),
            "**Tools** (1):\n• `current_time` — built-in, needs approval"
        );
    }
}
