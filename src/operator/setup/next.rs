//! What the wizard says last: what to do with the file it wrote.
//!
//! A daemon already running on the file's socket is asked to read its
//! configuration again, as `passepartout reload` does, and its answer is
//! shown (what applied, what waits for a restart, or why it refused the
//! file): telling a person to start a daemon that runs would only make the
//! second one fail. Then the commands that fit what was set up: `run` when
//! nothing runs, `chat` when no messenger was set up (the terminal is then
//! the way to talk), `web --open` when the dashboard is on, and `doctor`.

use std::path::Path;
use std::time::Duration;

use passepartout_socket::{AdminRequest, Client, Reloaded};

use crate::config::Config;
use crate::config::interview::Input;

/// How long reaching a running daemon may take before it counts as none.
const REACH: Duration = Duration::from_secs(3);

/// Says what comes next for `config`, written to the file `explicit` names
/// (or the default file).
pub async fn say(input: &Input, config: &Config, explicit: Option<&Path>) {
    let reloaded = reload_running(config).await;
    if let Some(reloaded) = &reloaded {
        input.say(&running(reloaded));
    }
    input.say(&commands(config, explicit, reloaded.is_some()));
}

/// The running daemon's answer to reading its file again; none when no
/// daemon answers on the socket.
async fn reload_running(config: &Config) -> Option<Reloaded> {
    let reload = async {
        let mut client = Client::connect(config.socket_path(), None).await.ok()?;
        client.ask(AdminRequest::Reload).await.ok()
    };
    tokio::time::timeout(REACH, reload).await.ok().flatten()
}

/// What the running daemon said.
fn running(reloaded: &Reloaded) -> String {
    if !reloaded.applied {
        return format!("The running daemon kept its old configuration: {}", reloaded.message);
    }
    let mut text = format!("The running daemon read the file again. {}", reloaded.message);
    if !reloaded.need_restart.is_empty() {
        text.push_str(&format!(
            "\nApplied only after a restart: {}",
            reloaded.need_restart.join(", ")
        ));
    }
    text
}

/// The commands to type next.
fn commands(config: &Config, explicit: Option<&Path>, running: bool) -> String {
    let flag = explicit.map_or_else(String::new, |file| format!(" --config {}", file.display()));
    let mut lines = vec!["Next:".to_owned()];
    let mut line = |command: &str, what: &str| {
        lines.push(format!(
            "  {:<width$} # {what}",
            format!("passepartout{flag} {command}"),
            width = 28 + flag.len()
        ));
    };
    if !running {
        line("run", "start the assistant");
    }
    if !config.telegram.enabled && !config.signal.enabled && !config.matrix.enabled {
        line("chat", "talk to it in this terminal");
    }
    if config.web.enabled {
        line("web --open", "sign this machine's browser in to the dashboard");
    }
    line("doctor", "check every part of it");
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_messenger_the_terminal_chat_is_named() {
        let config = Config::default();
        let text = commands(&config, None, false);
        assert!(text.contains("passepartout run "), "{text}");
        assert!(text.contains("passepartout chat "), "{text}");
        assert!(!text.contains("web --open"), "{text}");
    }

    #[test]
    fn a_messenger_and_the_dashboard_name_their_own_next_steps() {
        let mut config = Config::default();
        config.telegram.enabled = true;
        config.web.enabled = true;
        let text = commands(&config, Some(Path::new("/etc/pp.toml")), false);
        assert!(!text.contains(" chat "), "{text}");
        assert!(text.contains("passepartout --config /etc/pp.toml web --open"), "{text}");
    }

    #[test]
    fn a_running_daemon_is_not_started_again() {
        let text = commands(&Config::default(), None, true);
        assert!(!text.contains(" run "), "{text}");
        assert!(text.contains("doctor"), "{text}");
    }

    #[test]
    fn a_refused_file_is_said_to_leave_the_old_configuration() {
        let refused = Reloaded {
            applied: false,
            message: "telegram.approvers: not a number".into(),
            ..Reloaded::default()
        };
        assert!(running(&refused).contains("kept its old configuration"));
        let applied = Reloaded {
            applied: true,
            message: "Reloaded.".into(),
            need_restart: vec!["web.enabled".into()],
            ..Reloaded::default()
        };
        assert!(running(&applied).contains("after a restart: web.enabled"));
    }
}
