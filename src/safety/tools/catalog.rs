//! The catalog of the tools a daemon registers: each tool's name with the
//! names of its arguments (the `properties` of its JSON schema), known before
//! any tool is set up — building it creates no workspace and opens no store.
//! The settings that name a tool or an argument (`tools.require_approval`,
//! `[[skills.rules]]`, `[[skills.allowlists]]`) are checked against it, at
//! `check-config` and at start, so that a typo is an error instead of a gate
//! that silently never applies. The tools of the configured MCP servers are
//! known only once the servers answer: the catalog knows the servers' names,
//! and a name `SERVER__TOOL` (or `SERVER__*`) of a configured server passes.

use std::collections::{BTreeMap, BTreeSet};

use super::builtin_specs;
use crate::config::Config;
use crate::model::llm::ToolSpec;

/// Tool names and the names of their arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCatalog {
    tools: BTreeMap<String, BTreeSet<String>>,
    /// Whether more tools may be registered once the daemon runs, from a
    /// source asked only then whose names carry no known prefix. (The MCP
    /// servers' tools do carry one: they are checked by it, see `servers`.)
    /// No such source exists yet, so every other name is known at check time.
    ///
    /// This is the seam for such a source: with it, a tool name the catalog
    /// does not know is a warning rather than an error, since it may belong
    /// to a tool registered later. The gates must then treat a name they
    /// cannot check conservatively: they match by name at run time, so a late
    /// tool named in `tools.require_approval` or in a deny rule is held or
    /// refused when it appears, and an allowlist still lets through only what
    /// it names; a late tool's own calls should need approval until its name
    /// and schema have been checked like these. An unknown name must never
    /// loosen a gate.
    more_at_run_time: bool,
    /// The configured tool servers, whose tools are named `SERVER__TOOL`.
    servers: BTreeSet<String>,
}

impl ToolCatalog {
    /// The catalog of the tools with these `specs`.
    pub fn new(specs: impl IntoIterator<Item = ToolSpec>) -> Self {
        let tools = specs
            .into_iter()
            .map(|spec| {
                let arguments = argument_names(&spec.parameters);
                (spec.name, arguments)
            })
            .collect();
        Self {
            tools,
            more_at_run_time: false,
            servers: BTreeSet::new(),
        }
    }

    /// The tools a daemon for `config` registers: the built-in ones, then
    /// `more` — the loops' tools and any extensions, which this layer does
    /// not know.
    pub fn registered(config: &Config, more: impl IntoIterator<Item = ToolSpec>) -> Self {
        Self {
            servers: config.mcp.names().map(str::to_owned).collect(),
            ..Self::new(builtin_specs(config).into_iter().chain(more))
        }
    }

    /// The configured tool servers' names, in order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(String::as_str)
    }

    /// Whether a tool server called `name` is configured.
    pub fn has_server(&self, name: &str) -> bool {
        self.servers.contains(name)
    }

    /// The same catalog, saying that more tools may register at run time
    /// (see the field's comment).
    pub fn expecting_more(self) -> Self {
        Self {
            more_at_run_time: true,
            ..self
        }
    }

    /// Whether tools not in the catalog may still register at run time.
    pub fn expects_more(&self) -> bool {
        self.more_at_run_time
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Every tool's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The argument names of tool `name`, if it is registered.
    pub fn arguments(&self, name: &str) -> Option<&BTreeSet<String>> {
        self.tools.get(name)
    }

    /// Every argument name of any tool, in order.
    pub fn all_arguments(&self) -> BTreeSet<&str> {
        self.tools.values().flatten().map(String::as_str).collect()
    }
}

/// The names a JSON schema gives its object's properties.
fn argument_names(schema: &serde_json::Value) -> BTreeSet<String> {
    schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_the_schemas_properties() {
        let catalog = ToolCatalog::registered(&Config::default(), []);
        assert!(catalog.contains("shell") && !catalog.contains("shel"));
        let names = |tool: &str| -> Vec<&str> { catalog.arguments(tool).unwrap().iter().map(String::as_str).collect() };
        assert_eq!(names("shell"), ["command"]);
        assert_eq!(names("write_file"), ["append", "content", "path"]);
        assert!(names("current_time").is_empty());
        assert!(catalog.all_arguments().contains("url"));
        assert!(!catalog.expects_more());
        assert!(catalog.expecting_more().expects_more());
    }
}
