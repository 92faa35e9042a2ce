//! `[[mcp.servers]]`: tool servers spoken to over the Model Context
//! Protocol — a local program on its standard input and output, or a server
//! at a URL (streamable HTTP). Their tools are offered to the model as
//! `SERVER__TOOL`, so a server's name must be a valid prefix of a tool name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Problems, SandboxConfig, SandboxNetwork};

/// Whether a server is used unless it says `enabled = false`.
pub const DEFAULT_MCP_ENABLED: bool = true;
/// Longest one of a server's tool calls may run, in seconds.
pub const DEFAULT_MCP_TIMEOUT_S: u64 = 30;
/// Longest a server's tool name may be, with its `SERVER__` prefix: what the
/// model APIs accept.
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Longest a server's name may be, leaving room for its tools' names.
pub const MAX_SERVER_NAME_CHARS: usize = 24;
/// What joins a server's name and its tool's name.
pub const MCP_SEPARATOR: &str = "__";

/// `[mcp]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// The tool servers, each started (or connected to) when the daemon starts.
    pub servers: Vec<McpServerConfig>,
}

/// Whether a server's tools need a person's approval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpTrust {
    /// Every call needs approval, unless a `[[skills.rules]]` entry allows it.
    #[default]
    Ask,
    /// Calls run without approval (the other gates still apply).
    Allow,
}

/// `[[mcp.servers]]`: one tool server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name: its tools are offered as `NAME__TOOL`. Letters,
    /// digits, `-` and single `_`, at most 24 characters.
    pub name: String,
    /// The program to start, speaking MCP on its standard input and output
    /// (set this or `url`). Found on the `PATH` given to it.
    pub command: Option<PathBuf>,
    /// The program's arguments.
    pub args: Vec<String>,
    /// The program's whole environment, besides a minimal `PATH` and `HOME`:
    /// nothing of the daemon's own environment reaches it.
    pub env: BTreeMap<String, String>,
    /// The server's streamable HTTP endpoint (set this or `command`).
    pub url: Option<String>,
    /// Headers sent to `url`: header name → the environment variable holding
    /// its value (a token stays out of this file).
    pub headers_env: BTreeMap<String, String>,
    /// Whether the server is used.
    pub enabled: bool,
    /// Longest one tool call may run, in seconds; the call is cancelled then.
    pub timeout_s: u64,
    /// `"ask"`: each call needs approval unless a rule allows it; `"allow"`:
    /// calls run without approval.
    pub trust: McpTrust,
    /// Folders the server's process may also read, beside those of
    /// `[tools.sandbox]` and its program's own.
    pub allow_read: Vec<PathBuf>,
    /// Folders the server's process may also read and write.
    pub allow_write: Vec<PathBuf>,
    /// `"any"` or `"none"`; unset, `[tools.sandbox]`'s.
    pub network: Option<SandboxNetwork>,
    /// Unix sockets the server's process may also connect to, by path (see
    /// `[tools.sandbox] unix_sockets`).
    pub unix_sockets: Vec<PathBuf>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers_env: BTreeMap::new(),
            enabled: DEFAULT_MCP_ENABLED,
            timeout_s: DEFAULT_MCP_TIMEOUT_S,
            trust: McpTrust::default(),
            allow_read: Vec::new(),
            allow_write: Vec::new(),
            network: None,
            unix_sockets: Vec::new(),
        }
    }
}

impl McpConfig {
    /// The enabled servers.
    pub fn enabled(&self) -> impl Iterator<Item = &McpServerConfig> {
        self.servers.iter().filter(|server| server.enabled)
    }

    /// The names of the configured servers, enabled or not.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|server| server.name.as_str())
    }

    pub fn check(&self, problems: &mut Problems) {
        for (index, server) in self.servers.iter().enumerate() {
            let at = format!("mcp.servers[{index}]");
            server.check(&at, problems);
            let earlier = self.servers[..index].iter().any(|other| other.name == server.name);
            problems.check(
                !earlier || server.name.is_empty(),
                format!(
                    "{at}.name: {:?} names another server too; names must differ",
                    server.name
                ),
            );
        }
    }
}

impl McpServerConfig {
    fn check(&self, at: &str, problems: &mut Problems) {
        if let Err(why) = valid_server_name(&self.name) {
            problems.push(format!("{at}.name: {why}"));
        }
        let sandbox = SandboxConfig {
            allow_read: self.allow_read.clone(),
            allow_write: self.allow_write.clone(),
            unix_sockets: self.unix_sockets.clone(),
            ..SandboxConfig::default()
        };
        sandbox.check(at, problems);
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => problems.push(format!("{at}: set command or url, not both")),
            (None, None) => problems.push(format!("{at}: set command (a local program) or url (a server)")),
            (Some(command), None) => {
                problems.check(
                    !command.as_os_str().is_empty(),
                    format!("{at}.command must not be empty"),
                );
                problems.check(
                    self.headers_env.is_empty(),
                    format!("{at}.headers_env is for a server at a url; a command gets env"),
                );
            }
            (None, Some(url)) => {
                problems.check(
                    url.starts_with("http://") || url.starts_with("https://"),
                    format!("{at}.url must start with http:// or https://, not {url:?}"),
                );
                problems.check(
                    self.args.is_empty() && self.env.is_empty(),
                    format!("{at}: args and env are for a command; a url gets headers_env"),
                );
            }
        }
        for name in self.env.keys() {
            problems.check(
                !name.is_empty() && !name.contains(['=', '\0']),
                format!("{at}.env: {name:?} is not a valid variable name"),
            );
        }
        for (header, variable) in &self.headers_env {
            problems.check(
                !header.is_empty() && header.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                format!("{at}.headers_env: {header:?} is not a valid header name"),
            );
            problems.check(
                !variable.is_empty(),
                format!("{at}.headers_env.{header} must name an environment variable"),
            );
        }
        problems.check(self.timeout_s > 0, format!("{at}.timeout_s must be at least 1"));
    }
}

/// Why `name` cannot prefix tool names, if it cannot: letters, digits, `-`
/// and `_`, no `__` (which separates it from the tool's name), not starting
/// or ending with `_`, at most [`MAX_SERVER_NAME_CHARS`].
pub fn valid_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.chars().count() > MAX_SERVER_NAME_CHARS {
        return Err(format!("{name:?} is longer than {MAX_SERVER_NAME_CHARS} characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!("{name:?} may hold only letters, digits, - and _"));
    }
    if name.contains(MCP_SEPARATOR) || name.starts_with('_') || name.ends_with('_') {
        return Err(format!(
            "{name:?} must not hold \"__\" nor start or end with _ (it prefixes tool names as NAME__TOOL)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(config: &McpConfig) -> Vec<String> {
        let mut problems = Problems::default();
        config.check(&mut problems);
        problems.into_vec()
    }

    fn stdio(name: &str) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            command: Some("npx".into()),
            ..McpServerConfig::default()
        }
    }

    #[test]
    fn a_valid_server_has_no_problem() {
        let web = McpServerConfig {
            name: "notes".into(),
            url: Some("https://example.org/mcp".into()),
            headers_env: [("Authorization".to_owned(), "NOTES_TOKEN".to_owned())].into(),
            ..McpServerConfig::default()
        };
        assert!(
            problems(&McpConfig {
                servers: vec![stdio("everything"), web]
            })
            .is_empty()
        );
    }

    #[test]
    fn every_problem_is_named_with_its_key() {
        let config = McpConfig {
            servers: vec![
                stdio("time"),
                stdio("time"),
                McpServerConfig {
                    name: "a__b".into(),
                    url: Some("ftp://x".into()),
                    command: Some("x".into()),
                    ..McpServerConfig::default()
                },
                McpServerConfig {
                    name: "web".into(),
                    url: Some("ftp://x".into()),
                    args: vec!["-v".into()],
                    timeout_s: 0,
                    ..McpServerConfig::default()
                },
                McpServerConfig {
                    name: "has space".into(),
                    headers_env: [("Bad Header".to_owned(), String::new())].into(),
                    ..stdio("x")
                },
            ],
        };
        assert_eq!(
            problems(&config),
            [
                "mcp.servers[1].name: \"time\" names another server too; names must differ",
                "mcp.servers[2].name: \"a__b\" must not hold \"__\" nor start or end with _ (it prefixes tool names as NAME__TOOL)",
                "mcp.servers[2]: set command or url, not both",
                "mcp.servers[3].url must start with http:// or https://, not \"ftp://x\"",
                "mcp.servers[3]: args and env are for a command; a url gets headers_env",
                "mcp.servers[3].timeout_s must be at least 1",
                "mcp.servers[4].name: \"has space\" may hold only letters, digits, - and _",
                "mcp.servers[4].headers_env is for a server at a url; a command gets env",
                "mcp.servers[4].headers_env: \"Bad Header\" is not a valid header name",
                "mcp.servers[4].headers_env.Bad Header must name an environment variable",
            ]
        );
    }

    #[test]
    fn trust_is_ask_unless_said() {
        let server: McpServerConfig = toml_server("name = \"t\"\ncommand = \"x\"");
        assert_eq!(server.trust, McpTrust::Ask);
        assert!(server.enabled);
        assert_eq!(server.timeout_s, DEFAULT_MCP_TIMEOUT_S);
        let server: McpServerConfig = toml_server("name = \"t\"\ncommand = \"x\"\ntrust = \"allow\"");
        assert_eq!(server.trust, McpTrust::Allow);
    }

    fn toml_server(text: &str) -> McpServerConfig {
        config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }
}
