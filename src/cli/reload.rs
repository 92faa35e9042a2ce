//! `passepartout reload`: asks the running daemon to read its
//! configuration again, and prints what now applies, what waits for a
//! restart, or every problem that made it refuse the file (exit 2; the
//! daemon runs on as before).

use std::process::ExitCode;

use passepartout_socket::{AdminRequest, Reloaded};

use super::client::{EXIT_UNREACHABLE, connect};
use crate::config::Config;

pub async fn run(config: &Config) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.ask::<Reloaded>(AdminRequest::Reload).await {
        Ok(reloaded) => {
            let (text, code) = render(&reloaded);
            if reloaded.applied {
                print!("{text}");
            } else {
                eprint!("{text}");
            }
            code
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}

/// What is printed, and the exit code.
fn render(reloaded: &Reloaded) -> (String, ExitCode) {
    if !reloaded.applied {
        return (format!("passepartout: {}\n", reloaded.message), ExitCode::from(2));
    }
    let mut text = format!("{}\n", reloaded.message);
    if !reloaded.need_restart.is_empty() {
        text.push_str(&format!(
            "Changed, but applied only after a restart: {}\n",
            reloaded.need_restart.join(", ")
        ));
    }
    (text, ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_waits_for_a_restart_is_named() {
        let reloaded = Reloaded {
            applied: true,
            message: "Reloaded: telegram.allowed_users now apply.".into(),
            changed: vec!["telegram.allowed_users".into()],
            need_restart: vec!["telegram.enabled".into(), "data_dir".into()],
            problems: vec![],
        };
        let (text, code) = render(&reloaded);
        assert_eq!(code, ExitCode::SUCCESS);
        assert!(text.contains("telegram.allowed_users now apply"), "{text}");
        assert!(text.contains("after a restart: telegram.enabled, data_dir"), "{text}");
    }

    #[test]
    fn a_refused_file_exits_two() {
        let reloaded = Reloaded {
            applied: false,
            message: "The configuration was not reloaded; …".into(),
            ..Reloaded::default()
        };
        assert_eq!(render(&reloaded).1, ExitCode::from(2));
    }
}
