//! The `[signal]` section as the wizard writes it: the person's own
//! account, answered in its Note to Self, and how the daemon reaches
//! signal-cli.

use crate::config::interview::render::quoted;

/// How the daemon reaches signal-cli.
pub enum SignalReach<'a> {
    /// It starts this program as its own child, with this data folder
    /// (signal-cli's own default when none).
    Spawn { program: &'a str, data: Option<&'a str> },
    /// It connects to the multi-account daemon here.
    Endpoint(&'a str),
}

/// Signal's section, on the person's own account.
pub fn render(account: &str, reach: SignalReach<'_>) -> String {
    let reach = match reach {
        SignalReach::Spawn { program, data } => {
            let data = data.map_or_else(String::new, |dir| {
                format!(
                    "# signal-cli's data folder, where the account was linked.\nspawn_config_dir = {}\n",
                    quoted(dir)
                )
            });
            format!(
                "# The daemon starts signal-cli itself, as its own child.\nspawn = true\n\
                 # The signal-cli program it starts.\nspawn_program = {}\n{data}",
                quoted(program)
            )
        }
        SignalReach::Endpoint(endpoint) => format!(
            "# The signal-cli daemon (started without -a) the assistant connects to.\n\
             endpoint = {}\n\
             # That daemon serves several accounts; this one is `account`.\n\
             multi_account = true\n",
            quoted(endpoint)
        ),
    };
    format!(
        "# Signal: the assistant is a linked device of your own account, and\n\
         # answers what you write to Note to Self. Nobody else's messages reach it.\n\
         [signal]\n\
         enabled = true\n\
         # Your number, as the linked account.\n\
         account = {account}\n\
         # Note to Self is the conversation with the assistant; every other chat\n\
         # of the account is left alone (no answers, no pairing codes).\n\
         note_to_self = true\n\
         {reach}",
        account = quoted(account),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::interview::render::{assert_commented, document, loaded};

    #[test]
    fn the_signal_section_round_trips_for_a_child_or_a_daemon() {
        let spawned = render(
            "+15550000077",
            SignalReach::Spawn {
                program: "/opt/signal-cli/bin/signal-cli",
                data: Some("/var/lib/passepartout/signal-cli"),
            },
        );
        let text = document(&[spawned]);
        assert_commented(&text);
        let config = loaded(&text);
        let section = &config.signal;
        assert!(section.enabled && section.note_to_self && section.spawn);
        assert_eq!(section.account, "+15550000077");
        assert_eq!(section.spawn_program, "/opt/signal-cli/bin/signal-cli");
        assert_eq!(
            section.spawn_config_dir.as_deref(),
            Some("/var/lib/passepartout/signal-cli")
        );
        let through = render("+15550000077", SignalReach::Endpoint("tcp:127.0.0.1:7583"));
        let text = document(&[through]);
        assert_commented(&text);
        let config = loaded(&text);
        assert!(!config.signal.spawn && config.signal.multi_account);
        assert_eq!(config.signal.endpoint, "tcp:127.0.0.1:7583");
    }
}
