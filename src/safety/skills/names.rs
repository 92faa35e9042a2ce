//! The names the gates' settings give — tools in `tools.require_approval`,
//! `[[skills.rules]]`, `[[skills.allowlists]]` and
//! `skills.consensus.applies_to`, and a rule's argument —
//! checked against the tools the daemon registers ([`ToolCatalog`]). The
//! gates match names exactly, so a misspelt one would never apply: the
//! approval it was meant to ask for, the rule it was meant to enforce, would
//! silently be gone. `check-config` reports such names and the daemon
//! refuses to start with them, each naming the key and the closest valid name.
//! A tool server's tools are known only once it runs, so `SERVER__TOOL` and
//! `SERVER__*` pass when `SERVER` is a configured server, and a name whose
//! prefix is no configured server is refused with the closest server's name.

use super::suggest::closest;
use crate::config::{AppliesTo, MCP_SEPARATOR, SkillsConfig, ToolsConfig};
use crate::safety::tools::ToolCatalog;

/// What a rule's `tool` may be besides a tool's name: every tool.
const EVERY_TOOL: &str = "*";

/// What [`check_names`] found, as sentences naming the key.
#[derive(Debug, Default, PartialEq)]
pub struct NameCheck {
    /// Names that match nothing: the configuration is refused.
    pub errors: Vec<String>,
    /// Tool names that match nothing yet, when the catalog expects tools to
    /// register at run time (see [`ToolCatalog::expecting_more`]).
    pub warnings: Vec<String>,
}

impl NameCheck {
    /// Logs each warning; `Err` with the errors if there are any.
    pub fn refused(self) -> Result<(), Vec<String>> {
        for warning in &self.warnings {
            tracing::warn!(problem = %warning, "a setting names a tool that is not registered yet");
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }

    /// A tool name at `key` that is not in the catalog.
    fn unknown_tool(&mut self, catalog: &ToolCatalog, key: &str, name: &str) {
        let names: Vec<&str> = catalog.names().collect();
        let hint = hint(name, &names, "the tools");
        self.note(
            format!("{key}: there is no tool {name:?}{hint}"),
            catalog.expects_more(),
        );
    }

    /// A tool name at `key` of the form `SERVER__…` whose server is not configured.
    fn unknown_server(&mut self, catalog: &ToolCatalog, key: &str, name: &str, server: &str) {
        let servers: Vec<&str> = catalog.servers().collect();
        let hint = hint(server, &servers, "the MCP servers");
        self.errors.push(format!(
            "{key}: {name:?} names no configured MCP server {server:?}{hint}"
        ));
    }

    /// Notes `problem`: an error, or a warning when what it names may still
    /// come `later`, with a tool registered at run time.
    fn note(&mut self, problem: String, later: bool) {
        // The seam for tools registered at run time: a name unknown now may
        // be theirs, and the gates treat it conservatively (see the catalog).
        if later {
            self.warnings
                .push(format!("{problem} — unless a tool registered at run time brings it"));
        } else {
            self.errors.push(problem);
        }
    }
}

/// Every tool and argument name in `[tools]` and `[skills]` that the
/// `catalog` does not know.
pub fn check_names(skills: &SkillsConfig, tools: &ToolsConfig, catalog: &ToolCatalog) -> NameCheck {
    let mut found = NameCheck::default();
    // Whether `name` is a tool whose arguments the catalog knows.
    let tool = |found: &mut NameCheck, key: String, name: &str| {
        if catalog.contains(name) {
            return true;
        }
        match name.split_once(MCP_SEPARATOR) {
            Some((server, _)) if catalog.has_server(server) => {}
            Some((server, _)) => found.unknown_server(catalog, &key, name, server),
            None => found.unknown_tool(catalog, &key, name),
        }
        false
    };
    for (index, name) in tools.require_approval.iter().enumerate() {
        tool(&mut found, format!("tools.require_approval[{index}]"), name);
    }
    for (index, list) in skills.allowlists.iter().enumerate() {
        for (position, name) in list.tools.iter().enumerate() {
            tool(
                &mut found,
                format!("skills.allowlists[{index}].tools[{position}]"),
                name,
            );
        }
    }
    if let AppliesTo::Tools(names) = &skills.consensus.applies_to {
        for (index, name) in names.iter().enumerate() {
            tool(&mut found, format!("skills.consensus.applies_to[{index}]"), name);
        }
    }
    for (index, rule) in skills.rules.iter().enumerate() {
        // An empty tool is reported with the rest of `[skills]`.
        if rule.tool.trim().is_empty() {
            continue;
        }
        let every = rule.tool == EVERY_TOOL;
        if !every && !tool(&mut found, format!("skills.rules[{index}].tool"), &rule.tool) {
            continue;
        }
        if let Some(argument) = &rule.argument {
            let key = format!("skills.rules[{index}].argument");
            check_argument(&mut found, catalog, &key, &rule.tool, argument);
        }
    }
    found
}

/// A rule's `argument`: one of its tool's arguments, or of any tool's for `"*"`.
fn check_argument(found: &mut NameCheck, catalog: &ToolCatalog, key: &str, tool: &str, argument: &str) {
    if tool == EVERY_TOOL {
        let all: Vec<&str> = catalog.all_arguments().into_iter().collect();
        if !all.contains(&argument) {
            let hint = hint(argument, &all, "the arguments");
            let problem = format!("{key}: no tool has an argument {argument:?}{hint}");
            found.note(problem, catalog.expects_more());
        }
        return;
    }
    let Some(arguments) = catalog.arguments(tool) else {
        return;
    };
    if !arguments.contains(argument) {
        let names: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let hint = hint(argument, &names, "its arguments");
        found.note(
            format!("{key}: tool {tool:?} has no argument {argument:?}{hint}"),
            false,
        );
    }
}

/// "; did you mean …?" when one of `names` is close to `typed`, else which
/// there are, as `listed` ("the tools", "its arguments").
fn hint(typed: &str, names: &[&str], listed: &str) -> String {
    match closest(typed, names.iter().copied()) {
        Some(close) => format!("; did you mean {close:?}?"),
        None if names.is_empty() => format!(" ({listed}: none)"),
        None => format!(" ({listed}: {})", names.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AllowlistConfig, Config, RuleConfig, RuleVerdict};

    /// What `run` registers.
    fn catalog() -> ToolCatalog {
        ToolCatalog::registered(&Config::default(), crate::engine::loops::tools::specs())
    }

    fn rule(tool: &str, argument: Option<&str>) -> RuleConfig {
        RuleConfig {
            tool: tool.into(),
            pattern: Some("x".into()),
            argument: argument.map(Into::into),
            verdict: RuleVerdict::Deny,
            reason: None,
        }
    }

    fn check(config: &Config) -> NameCheck {
        check_names(&config.skills, &config.tools, &catalog())
    }

    #[test]
    fn the_defaults_name_only_registered_tools() {
        assert_eq!(check(&Config::default()), NameCheck::default());
    }

    #[test]
    fn a_tool_servers_tools_pass_by_the_servers_name_and_a_misspelt_server_is_named() {
        let mut config = Config::default();
        config.mcp.servers = vec![crate::config::McpServerConfig {
            name: "everything".into(),
            command: Some("x".into()),
            ..Default::default()
        }];
        config.tools.require_approval = vec!["everything__add".into()];
        config.skills.allowlists = vec![AllowlistConfig {
            conversation: "socket:kids".into(),
            tools: vec!["everything__*".into(), "everythin__echo".into()],
        }];
        config.skills.rules = vec![
            rule("everything__echo", Some("anything")),
            rule("everything__*", None),
            rule("calendar__*", None),
        ];
        let found = check_names(
            &config.skills,
            &config.tools,
            &ToolCatalog::registered(&config, crate::engine::loops::tools::specs()),
        );
        assert_eq!(
            found.errors,
            [
                "skills.allowlists[0].tools[1]: \"everythin__echo\" names no configured MCP server \"everythin\"; did you mean \"everything\"?",
                "skills.rules[2].tool: \"calendar__*\" names no configured MCP server \"calendar\" (the MCP servers: everything)",
            ]
        );
        assert!(found.warnings.is_empty());
    }

    #[test]
    fn a_misspelt_tool_is_named_with_the_closest_one() {
        let mut config = Config::default();
        config.tools.require_approval = vec!["shel".into(), "write_file".into(), "browse".into()];
        config.skills.allowlists = vec![AllowlistConfig {
            conversation: "socket:kids".into(),
            tools: vec!["current_time".into(), "recal".into()],
        }];
        config.skills.rules = vec![rule("shell", Some("command")), rule("shel", Some("cmd"))];
        let found = check(&config);
        assert_eq!(
            found.errors,
            [
                "tools.require_approval[0]: there is no tool \"shel\"; did you mean \"shell\"?".to_owned(),
                format!(
                    "tools.require_approval[2]: there is no tool \"browse\" (the tools: {})",
                    catalog().names().collect::<Vec<_>>().join(", ")
                ),
                "skills.allowlists[0].tools[1]: there is no tool \"recal\"; did you mean \"recall\"?".to_owned(),
                "skills.rules[1].tool: there is no tool \"shel\"; did you mean \"shell\"?".to_owned(),
            ],
            "the argument of a rule for an unknown tool is not checked"
        );
        assert!(found.warnings.is_empty());
    }

    #[test]
    fn a_misspelt_tool_put_to_the_vote_is_named() {
        let mut config = Config::default();
        config.skills.consensus.applies_to = crate::config::AppliesTo::Tools(vec!["shell".into(), "htp_get".into()]);
        assert_eq!(
            check(&config).errors,
            ["skills.consensus.applies_to[1]: there is no tool \"htp_get\"; did you mean \"http_get\"?"]
        );
    }

    #[test]
    fn a_rules_argument_must_be_one_of_its_tools() {
        let mut config = Config::default();
        config.skills.rules = vec![
            rule("shell", Some("cmd")),
            rule("http_get", Some("path")),
            rule("current_time", Some("zone")),
            rule("*", Some("url")),
            rule("*", Some("comand")),
            rule("*", None),
            rule("", Some("cmd")),
        ];
        assert_eq!(
            check(&config).errors,
            [
                "skills.rules[0].argument: tool \"shell\" has no argument \"cmd\"; did you mean \"command\"?",
                "skills.rules[1].argument: tool \"http_get\" has no argument \"path\" (its arguments: start, url)",
                "skills.rules[2].argument: tool \"current_time\" has no argument \"zone\" (its arguments: none)",
                "skills.rules[4].argument: no tool has an argument \"comand\"; did you mean \"command\"?",
            ]
        );
    }

    #[test]
    fn where_tools_may_register_at_run_time_an_unknown_tool_is_a_warning() {
        let mut config = Config::default();
        config.tools.require_approval = vec!["shel".into()];
        config.skills.rules = vec![
            rule("mcp_search", Some("query")),
            rule("shell", Some("cmd")),
            rule("*", Some("engine")),
        ];
        let found = check_names(&config.skills, &config.tools, &catalog().expecting_more());
        assert_eq!(found.warnings.len(), 3, "{found:?}");
        assert!(found.warnings[0].starts_with("tools.require_approval[0]: there is no tool \"shel\"; did you mean"));
        assert!(found.warnings[1].starts_with("skills.rules[0].tool: there is no tool \"mcp_search\""));
        assert!(found.warnings[2].starts_with("skills.rules[2].argument: no tool has an argument \"engine\""));
        assert!(
            found
                .warnings
                .iter()
                .all(|w| w.ends_with("unless a tool registered at run time brings it"))
        );
        assert_eq!(
            found.errors,
            ["skills.rules[1].argument: tool \"shell\" has no argument \"cmd\"; did you mean \"command\"?"],
            "a known tool's arguments are known"
        );
        assert_eq!(
            found.refused(),
            Err(vec![
                "skills.rules[1].argument: tool \"shell\" has no argument \"cmd\"; did you mean \"command\"?".into()
            ])
        );
    }
}
