//! What a standing rule covers, derived from the call a person answered
//! "always" to — as narrowly as still makes the rule worth having — and
//! whether a later call falls within it.
//!
//! - `shell`: the same command line, exactly; for a plain command of a
//!   program that only shows things, also that command with more options
//!   (see [`super::shell`]).
//! - `write_file`, `list_dir`: the same path; `read_file`, `send_file`:
//!   files in the same directory. Other arguments (the content) are free; a
//!   path with `..` in it gets an exact rule.
//! - `http_get`: URLs on the same host (and port).
//! - any other tool, tool servers' (`SERVER__TOOL`) included: exactly the
//!   same arguments.

use passepartout_gateway::markup;
use passepartout_gateway::visible;
use serde_json::Value;

use super::shell;
use crate::safety::skills::ProposedCall;
use crate::store::Scope;

/// Tools whose rule covers one path: the argument that names it.
const ONE_PATH: &[(&str, &str)] = &[("write_file", "path"), ("list_dir", "path")];
/// Tools whose rule covers a directory's files: the argument that names one.
const ONE_DIRECTORY: &[(&str, &str)] = &[("read_file", "path"), ("send_file", "path")];
/// Tools whose rule covers a host: the argument that holds the URL.
const ONE_HOST: &[(&str, &str)] = &[("http_get", "url")];

/// The scope of the rule an "always" to `call` makes.
pub fn derive(call: &ProposedCall) -> Scope {
    let exact = || Scope::Arguments {
        arguments: call.arguments.clone(),
    };
    let argument = |table: &[(&str, &'static str)]| {
        table
            .iter()
            .find(|(tool, _)| *tool == call.tool)
            .map(|(_, argument)| *argument)
    };
    if call.tool == "shell" {
        return match only_command(&call.arguments) {
            Some(command) => match shell::prefix(command) {
                Some(words) => Scope::CommandPrefix { words },
                None => Scope::Command {
                    command: command.to_owned(),
                },
            },
            None => exact(),
        };
    }
    if let Some(argument) = argument(ONE_PATH) {
        return match call.string_argument(argument).and_then(normalized) {
            Some(path) => Scope::Path {
                argument: argument.into(),
                path,
            },
            None => exact(),
        };
    }
    if let Some(argument) = argument(ONE_DIRECTORY) {
        return match call.string_argument(argument).and_then(normalized) {
            Some(path) => Scope::Directory {
                argument: argument.into(),
                directory: parent(&path).to_owned(),
            },
            None => exact(),
        };
    }
    if let Some(argument) = argument(ONE_HOST) {
        return match call.string_argument(argument).and_then(host) {
            Some(host) => Scope::Host {
                argument: argument.into(),
                host,
            },
            None => exact(),
        };
    }
    exact()
}

/// Whether `scope` covers `call` (of the rule's tool).
pub fn covers(scope: &Scope, call: &ProposedCall) -> bool {
    match scope {
        Scope::Command { command } => only_command(&call.arguments) == Some(command.as_str()),
        Scope::CommandPrefix { words } => only_command(&call.arguments).is_some_and(|c| shell::covered(words, c)),
        Scope::Path { argument, path } => call.string_argument(argument).and_then(normalized).as_ref() == Some(path),
        Scope::Directory { argument, directory } => call
            .string_argument(argument)
            .and_then(normalized)
            .is_some_and(|path| parent(&path) == directory),
        Scope::Host { argument, host: wanted } => {
            call.string_argument(argument).and_then(host).as_ref() == Some(wanted)
        }
        Scope::Arguments { arguments } => call.arguments == *arguments,
    }
}

/// What `scope` covers of `tool`, for people, as Markdown: in the prompt
/// before the rule is made, in listings and in the audit trail. It names
/// the pattern a call must match, in the terms [`covers`] checks (a
/// property test holds the two together). What the call held is shown with
/// its control, bidirectional and invisible characters as escapes.
pub fn shown(tool: &str, scope: &Scope) -> String {
    match scope {
        Scope::Command { command } => format!("{} exactly as written", code(command)),
        Scope::CommandPrefix { words } => {
            format!("{} and the same command with more options", code(&words.join(" ")))
        }
        Scope::Path { path, .. } => format!("{} on {}", code(tool), code(path)),
        Scope::Directory { directory, .. } if directory.is_empty() => {
            format!("{} on files at the top of the workspace", code(tool))
        }
        Scope::Directory { directory, .. } => {
            format!("{} on files in {}", code(tool), code(&format!("{directory}/")))
        }
        Scope::Host { host, .. } => format!("{} from {}", code(tool), code(host)),
        Scope::Arguments { arguments } => {
            let call = ProposedCall {
                tool: tool.to_owned(),
                arguments: arguments.clone(),
            };
            format!("{} with exactly these arguments", code(&call.summary()))
        }
    }
}

/// `text` as an inline code span, on one line, hiding nothing.
fn code(text: &str) -> String {
    markup::code(&visible::line(text))
}

/// The command of a shell call that has nothing but a command.
fn only_command(arguments: &Value) -> Option<&str> {
    let object = arguments.as_object()?;
    match (object.len(), object.get("command")) {
        (1, Some(Value::String(command))) => Some(command),
        _ => None,
    }
}

/// `path` with empty and `.` parts left out (`./notes//a.md` is
/// `notes/a.md`); none if it climbs (`..`) or names nothing.
fn normalized(path: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (path.starts_with('/'), parts.is_empty()) {
        (_, true) => None,
        (true, false) => Some(format!("/{joined}")),
        (false, false) => Some(joined),
    }
}

/// The directory a normalized path is in (`""`: the top).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(at) => &path[..at],
        None => "",
    }
}

/// The host (and a port that is not the scheme's own) of an http(s) URL.
fn host(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.to_ascii_lowercase();
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
