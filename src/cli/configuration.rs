//! `passepartout config example|path`: the documented example of every
//! setting, built into the binary (a person with only the binary has no
//! checkout to read it from), and which file the commands read.

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;

/// Every setting, its default and what it does: the project's
/// `config.example.toml`, as this binary reads it.
pub const EXAMPLE: &str = include_str!("../../config.example.toml");

/// `passepartout config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print an example configuration documenting every setting and its
    /// default, e.g. `passepartout config example > config.toml`.
    Example,
    /// Print the configuration file the commands read (--config, else the
    /// default file), and whether it exists.
    Path,
}

pub fn run(command: ConfigCommand, explicit: Option<&Path>) -> ExitCode {
    match command {
        ConfigCommand::Example => print!("{EXAMPLE}"),
        ConfigCommand::Path => match explicit
            .map(Path::to_path_buf)
            .or_else(crate::config::default_config_path)
        {
            Some(file) if file.exists() => println!("{}", file.display()),
            Some(file) => println!("{} (not written yet: `passepartout setup` writes it)", file.display()),
            None => {
                eprintln!("passepartout: no default configuration file: neither XDG_CONFIG_HOME nor HOME is set");
                return ExitCode::from(2);
            }
        },
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_loads_and_documents_every_section() {
        let example: toml_edit::DocumentMut = EXAMPLE.parse().expect("the example is TOML");
        for section in ["llm", "telegram", "signal", "web", "tools"] {
            assert!(example.contains_key(section), "the example has no [{section}]");
        }
    }
}
