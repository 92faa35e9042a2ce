//! Which tools' calls run in a process the kernel cannot confine, so that
//! their approval prompts say so: on a kernel without Landlock, the shell's
//! commands and every stdio MCP server's tools. They run unconfined, or,
//! under `tools.sandbox.require`, are refused.

use crate::config::{MCP_SEPARATOR, McpConfig};

/// The tools whose processes run unconfined (or are refused).
#[derive(Clone, Debug, Default)]
pub struct Unconfined {
    shell: bool,
    servers: Vec<String>,
    /// `tools.sandbox.require`: the processes are refused, not run.
    refused: bool,
}

impl Unconfined {
    /// Where tool processes are not confined (`confines` false): the shell
    /// and the stdio servers of `mcp`, refused when `require`d; otherwise
    /// none.
    pub fn on(confines: bool, require: bool, mcp: &McpConfig) -> Self {
        if confines {
            return Self::default();
        }
        Self {
            refused: require,
            shell: true,
            servers: mcp
                .servers
                .iter()
                .filter(|server| server.command.is_some())
                .map(|server| server.name.clone())
                .collect(),
        }
    }

    /// The line a prompt for a call of `tool` adds, if it runs unconfined
    /// or is refused.
    pub fn line(&self, tool: &str) -> Option<&'static str> {
        let covered = match tool.split_once(MCP_SEPARATOR) {
            Some((server, _)) => self.servers.iter().any(|name| name == server),
            None => self.shell && tool == "shell",
        };
        match (covered, self.refused) {
            (false, _) => None,
            (true, false) => Some("It runs unconfined on this system: the kernel offers no Landlock."),
            (true, true) => Some(
                "It will be refused: tools.sandbox.require is on and this kernel offers no Landlock to confine it.",
            ),
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
        let unconfined = Unconfined::on(false, false, &mcp());
        let says = |tool: &str| {
            unconfined
                .line(tool)
                .is_some_and(|line| line.contains("runs unconfined"))
        };
        assert!(says("shell"));
        assert!(says(&format!("files{MCP_SEPARATOR}read_file")));
        assert_eq!(
            unconfined.line(&format!("search{MCP_SEPARATOR}query")),
            None,
            "no local process"
        );
        assert_eq!(unconfined.line("remember"), None, "built in, no process");
    }

    #[test]
    fn required_they_are_refused_instead() {
        let refused = Unconfined::on(false, true, &mcp());
        for tool in ["shell".to_owned(), format!("files{MCP_SEPARATOR}read_file")] {
            let line = refused.line(&tool).unwrap_or_default();
            assert!(
                line.contains("will be refused") && !line.contains("runs unconfined"),
                "{line}"
            );
        }
    }

    #[test]
    fn with_landlock_nothing_is_said() {
        let confined = Unconfined::on(true, true, &mcp());
        assert_eq!(confined.line("shell"), None);
        assert_eq!(confined.line(&format!("files{MCP_SEPARATOR}read_file")), None);
    }
}
