//! Which tools' calls run in a process the kernel cannot confine, so that
//! their approval prompts say so: on a kernel without Landlock, the shell's
//! commands and every stdio MCP server's tools.

use crate::config::{MCP_SEPARATOR, McpConfig};

/// The tools whose processes run unconfined.
#[derive(Clone, Debug, Default)]
pub struct Unconfined {
    shell: bool,
    servers: Vec<String>,
}

impl Unconfined {
    /// Where tool processes are not confined (`confines` false): the shell
    /// and the stdio servers of `mcp`; otherwise none.
    pub fn on(confines: bool, mcp: &McpConfig) -> Self {
        if confines {
            return Self::default();
        }
        Self {
            shell: true,
            servers: mcp
                .servers
                .iter()
                .filter(|server| server.command.is_some())
                .map(|server| server.name.clone())
                .collect(),
        }
    }

    /// Whether a call of `tool` runs unconfined.
    pub fn covers(&self, tool: &str) -> bool {
        match tool.split_once(MCP_SEPARATOR) {
            Some((server, _)) => self.servers.iter().any(|name| name == server),
            None => self.shell && tool == "shell",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpServerConfig;

    fn mcp() -> McpConfig {
        let stdio = McpServerConfig {
            name: "files".into(),
            command: Some("/usr/bin/files-server".into()),
            ..McpServerConfig::default()
        };
        let remote = McpServerConfig {
            name: "search".into(),
            url: Some("https://mcp.example.com/".into()),
            ..McpServerConfig::default()
        };
        McpConfig {
            servers: vec![stdio, remote],
        }
    }

    #[test]
    fn without_landlock_the_shell_and_stdio_servers_run_unconfined() {
        let unconfined = Unconfined::on(false, &mcp());
        assert!(unconfined.covers("shell"));
        assert!(unconfined.covers(&format!("files{MCP_SEPARATOR}read_file")));
        assert!(
            !unconfined.covers(&format!("search{MCP_SEPARATOR}query")),
            "no local process"
        );
        assert!(!unconfined.covers("remember"), "built in, no process");
    }

    #[test]
    fn with_landlock_nothing_runs_unconfined() {
        let unconfined = Unconfined::on(true, &mcp());
        assert!(!unconfined.covers("shell"));
        assert!(!unconfined.covers(&format!("files{MCP_SEPARATOR}read_file")));
    }
}
