//! What a client command needs from a configuration file that does not
//! load: where the daemon keeps its data and its socket.
//!
//! A typo anywhere in the file must not lock the terminal out of a daemon
//! that runs on with the file it read before: `status`, `approvals`,
//! `send` and the rest only need to find the socket. So when the file has
//! problems, `data_dir` and `[socket] path` are read from it on their own —
//! from the parsed document, or, when the file is not even TOML, line by
//! line — and everything else takes its built-in default. The environment's
//! `PASSEPARTOUT_DATA_DIR` and `PASSEPARTOUT_SOCKET__PATH` still win, as
//! they do over a file that loads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use toml_edit::{DocumentMut, Item};

use super::Config;

/// The variables that set what a client needs.
const DATA_DIR_VAR: &str = "PASSEPARTOUT_DATA_DIR";
const SOCKET_PATH_VAR: &str = "PASSEPARTOUT_SOCKET__PATH";

/// The two settings a client needs, as far as they could be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Found {
    data_dir: Option<String>,
    socket_path: Option<String>,
}

/// The defaults, with the data directory and the socket's path taken from
/// `file` (when it can be read) and then from `env` (`None`: the process's
/// environment).
pub fn salvage(file: Option<&Path>, env: Option<&HashMap<String, String>>) -> Config {
    let mut found = file
        .and_then(|path| std::fs::read_to_string(path).ok())
        .map(|text| read(&text))
        .unwrap_or_default();
    let var = |name: &str| match env {
        Some(vars) => vars.get(name).cloned(),
        None => std::env::var(name).ok(),
    };
    if let Some(dir) = var(DATA_DIR_VAR).filter(|dir| !dir.is_empty()) {
        found.data_dir = Some(dir);
    }
    if let Some(path) = var(SOCKET_PATH_VAR).filter(|path| !path.is_empty()) {
        found.socket_path = Some(path);
    }
    let mut config = Config::default();
    if let Some(dir) = found.data_dir {
        config.data_dir = PathBuf::from(dir);
    }
    if let Some(path) = found.socket_path {
        config.socket.path = Some(PathBuf::from(path));
    }
    config
}

/// The two settings in a file's text: from the document when it is TOML,
/// else from the lines that still read as TOML on their own.
fn read(text: &str) -> Found {
    match DocumentMut::from_str(text) {
        Ok(document) => Found {
            data_dir: text_of(document.get("data_dir")),
            socket_path: text_of(document.get("socket").and_then(|socket| socket.get("path"))),
        },
        Err(_) => read_lines(text),
    }
}

/// A string setting's value; anything else (a number, a table) is not a path.
fn text_of(item: Option<&Item>) -> Option<String> {
    item?.as_str().map(str::to_owned)
}

/// The settings from a file that is not TOML as a whole: each line that is
/// a table header or a `key = value` pair of its own is read; the rest is
/// skipped. A later line wins, as a later key would.
fn read_lines(text: &str) -> Found {
    let mut found = Found::default();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            // A table's name; an array of tables (`[[…]]`) is never `socket`.
            section = match header.split_once(']') {
                Some((name, _)) if !header.starts_with('[') => name.trim().trim_matches('"').to_owned(),
                _ => String::from("["),
            };
            continue;
        }
        let Ok(pair) = DocumentMut::from_str(line) else {
            continue;
        };
        match section.as_str() {
            "" => found.data_dir = text_of(pair.get("data_dir")).or(found.data_dir),
            "socket" => found.socket_path = text_of(pair.get("path")).or(found.socket_path),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env() -> Option<&'static HashMap<String, String>> {
        static EMPTY: std::sync::OnceLock<HashMap<String, String>> = std::sync::OnceLock::new();
        Some(EMPTY.get_or_init(HashMap::new))
    }

    fn salvaged(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        salvage(Some(&path), no_env())
    }

    #[test]
    fn a_file_with_an_unknown_key_still_gives_its_data_dir_and_socket() {
        let config = salvaged("data_dir = \"/srv/pp\"\n[pipeline]\nmax_dept = 3\n[socket]\npath = \"/run/pp.sock\"\n");
        assert_eq!(config.data_dir, PathBuf::from("/srv/pp"));
        assert_eq!(config.socket_path(), PathBuf::from("/run/pp.sock"));
        assert_eq!(config.pipeline, Config::default().pipeline, "the rest is the defaults");
    }

    #[test]
    fn a_file_that_is_not_toml_is_read_line_by_line() {
        let config =
            salvaged("data_dir = \"/srv/pp\"\n[telegram\nallowed_users = [1,\n[socket]\npath = \"/run/pp.sock\"\n");
        assert_eq!(config.data_dir, PathBuf::from("/srv/pp"));
        assert_eq!(config.socket_path(), PathBuf::from("/run/pp.sock"));
    }

    #[test]
    fn a_path_of_another_section_or_of_the_wrong_type_is_not_taken() {
        let config = salvaged("data_dir = 3\n[[mcp.servers]]\npath = \"/x\"\n[store]\npath = \"/y\"\n[socket\n");
        assert_eq!(config, Config::default());
        let config = salvaged("oops = \n[tools]\npath = \"/y\"\n");
        assert_eq!(config, Config::default());
    }

    #[test]
    fn the_environment_wins_over_the_file_and_no_file_gives_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "data_dir = \"/srv/pp\"\nnope = [\n").unwrap();
        let env = HashMap::from([(DATA_DIR_VAR.to_owned(), "/from/env".to_owned())]);
        assert_eq!(salvage(Some(&path), Some(&env)).data_dir, PathBuf::from("/from/env"));
        assert_eq!(salvage(None, no_env()), Config::default());
        assert_eq!(
            salvage(Some(&dir.path().join("missing.toml")), no_env()),
            Config::default()
        );
    }
}
