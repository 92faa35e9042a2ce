//! The configuration file as it may be shown to someone looking at the
//! dashboard: every value that could be a secret replaced by [`MASK`], and
//! the comments dropped (a comment may hold an old key; nothing reads it).
//!
//! What is masked: a string under a key that names a secret (`token`,
//! `password`, `api_key`, …), every value of an MCP server's `env` (a
//! program's environment is where its keys go), the credentials in a URL
//! (`http://user:pass@proxy`), and an argument given after, or joined to, a
//! flag that names a secret. What is kept: the names of environment
//! variables (`*_env`) and the paths of files (`*_file`) — the file's
//! content is never read here.

use toml_edit::{DocumentMut, Item, Table, Value};

/// What a masked value shows instead.
pub const MASK: &str = "••••••";

/// Parts of a key's name that say its value is a secret.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "key",
    "credential",
    "auth",
    "cookie",
    "private",
];

/// A configuration file with its secrets masked.
pub struct Masked {
    /// The file, every secret masked, without comments.
    pub text: String,
    /// What was masked, to scrub from messages about the file.
    secrets: Vec<String>,
}

impl Masked {
    /// `line` (a problem `check-config` found, say) with every value masked
    /// in the file masked in it too: a message may quote the value.
    pub fn scrub(&self, line: &str) -> String {
        self.secrets
            .iter()
            .fold(line.to_owned(), |line, secret| line.replace(secret.as_str(), MASK))
    }
}

/// `text` (a TOML file) with its secrets masked and its comments dropped.
/// A file that is not TOML is an error that says nothing of its content
/// (the parser's message quotes the line, which may hold a secret).
pub fn masked(text: &str) -> Result<Masked, NotToml> {
    let mut document: DocumentMut = text.parse().map_err(|_| NotToml)?;
    let mut secrets = Vec::new();
    mask_table(document.as_table_mut(), Within::Names, &mut secrets);
    // Formatting anew puts every key's and value's decoration back to the
    // default, which drops their comments; the tables' headers and the
    // file's end are cleared by hand.
    document.fmt();
    document.set_trailing("");
    // The longest first, so that a secret holding another is scrubbed whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.retain(|secret| !secret.is_empty());
    Ok(Masked {
        text: document.to_string(),
        secrets,
    })
}

/// The file is not TOML.
#[derive(Debug, thiserror::Error)]
#[error("the file is not valid TOML")]
pub struct NotToml;

/// Whether a key's name says its value is a secret. The names of
/// environment variables and the paths of files are not secrets.
pub fn secret_key(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if name.ends_with("_env") || name.ends_with("_file") {
        return false;
    }
    SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// How the values in a table are masked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Within {
    /// By their keys' names.
    Names,
    /// All of them: a program's environment (`env`).
    Everything,
    /// None of them: names mapped to environment variables (`headers_env`).
    Variables,
}

impl Within {
    /// How the values under `key`, in a table masked as `self`, are masked.
    fn under(self, key: &str) -> Within {
        match self {
            Within::Everything => Within::Everything,
            _ if key == "env" => Within::Everything,
            _ if key.ends_with("_env") => Within::Variables,
            _ => Within::Names,
        }
    }

    /// Whether the value of `key`, in a table masked as `self`, is a secret.
    fn secret(self, key: &str) -> bool {
        match self.under(key) {
            Within::Everything => true,
            _ => self == Within::Names && secret_key(key),
        }
    }
}

fn mask_table(table: &mut Table, within: Within, secrets: &mut Vec<String>) {
    table.decor_mut().clear();
    for (mut key, item) in table.iter_mut() {
        let name = key.get().to_owned();
        key.leaf_decor_mut().clear();
        key.dotted_decor_mut().clear();
        mask_item(item, &name, within, secrets);
    }
}

fn mask_item(item: &mut Item, name: &str, within: Within, secrets: &mut Vec<String>) {
    match item {
        Item::Table(table) => mask_table(table, within.under(name), secrets),
        Item::ArrayOfTables(tables) => {
            for table in tables.iter_mut() {
                mask_table(table, within.under(name), secrets);
            }
        }
        Item::Value(value) => mask_value(value, name, within.secret(name), within.under(name), secrets),
        Item::None => {}
    }
}

/// Masks `value`, the value of `name`: whole when `secret`; the values in
/// it (an inline table's) as `within` says.
fn mask_value(value: &mut Value, name: &str, secret: bool, within: Within, secrets: &mut Vec<String>) {
    // A comment after a value, or inside an array or an inline table, is
    // its decoration.
    value.decor_mut().clear();
    match value {
        Value::String(text) => {
            let shown = if secret {
                MASK.to_owned()
            } else {
                without_credentials(text.value())
            };
            if shown != *text.value() {
                secrets.push(text.value().clone());
                secrets.extend(credentials(text.value()).map(str::to_owned));
                *value = Value::from(shown);
            }
        }
        Value::Array(array) => {
            array.set_trailing("");
            let arguments = name == "args";
            let mut after_secret_flag = false;
            for element in array.iter_mut() {
                element.decor_mut().clear();
                let flagged = arguments && after_secret_flag;
                after_secret_flag = false;
                if let Value::String(text) = element {
                    let argument = text.value().clone();
                    let shown = if secret || flagged {
                        MASK.to_owned()
                    } else if arguments {
                        after_secret_flag = flag_names_secret(&argument) && !argument.contains('=');
                        masked_argument(&argument)
                    } else {
                        without_credentials(&argument)
                    };
                    if shown != argument {
                        secrets.extend(credentials(&argument).map(str::to_owned));
                        if let Some((_, value)) = argument.split_once('=') {
                            secrets.push(value.to_owned());
                        }
                        secrets.push(argument);
                        *element = Value::from(shown);
                    }
                } else {
                    mask_value(element, name, secret, within, secrets);
                }
            }
        }
        Value::InlineTable(table) => {
            table.set_trailing("");
            for (key, inner) in table.iter_mut() {
                let key = key.get().to_owned();
                mask_value(inner, &key, within.secret(&key), within.under(&key), secrets);
            }
        }
        // Numbers, booleans and dates are never secrets.
        _ => {}
    }
}

/// Whether `argument` is a flag (`--api-key`, `-token`) naming a secret.
fn flag_names_secret(argument: &str) -> bool {
    let flag = argument.split('=').next().unwrap_or("");
    flag.starts_with('-') && secret_key(flag.trim_start_matches('-'))
}

/// `--api-key=value` with its value masked; anything else without the
/// credentials of a URL in it.
fn masked_argument(argument: &str) -> String {
    match argument.split_once('=') {
        Some((flag, _)) if flag_names_secret(flag) => format!("{flag}={MASK}"),
        _ => without_credentials(argument),
    }
}

/// `text` with the credentials of a URL in it (`scheme://user:pass@host`)
/// masked; anything else as it is.
pub fn without_credentials(text: &str) -> String {
    match credentials(text) {
        Some(credentials) => text.replacen(credentials, MASK, 1),
        None => text.to_owned(),
    }
}

/// The `user:pass` of a URL in `text`, if it has any.
fn credentials(text: &str) -> Option<&str> {
    let authority_start = text.find("://")? + 3;
    let rest = &text[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(&rest[..at]).filter(|credentials| !credentials.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "canary-5e1f";

    fn shown(text: &str) -> String {
        let shown = masked(text).unwrap().text;
        assert!(!shown.contains(CANARY), "the canary shows in:\n{shown}");
        shown
    }

    #[test]
    fn secrets_by_name_are_masked_and_names_and_paths_kept() {
        let out = shown(&format!(
            "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\ntoken_file = \"/etc/pp/token\"\n\
             [[llm.providers]]\nname = \"main\"\napi_key = \"{CANARY}\"\nmax_tokens = 4096\n\
             [web]\nenabled = true\npassword = \"{CANARY}\"\n"
        ));
        for kept in [
            "TELEGRAM_BOT_TOKEN",
            "/etc/pp/token",
            "name = \"main\"",
            "max_tokens = 4096",
            "[web]",
            "enabled = true",
        ] {
            assert!(out.contains(kept), "{kept} missing from:\n{out}");
        }
        assert_eq!(out.matches(MASK).count(), 2, "{out}");
    }

    #[test]
    fn a_programs_environment_urls_and_arguments_are_masked() {
        let out = shown(&format!(
            "[llm]\n[[llm.providers]]\nproxy = \"socks5://me:{CANARY}@proxy:1080\"\n\
             [[mcp.servers]]\nname = \"files\"\nenv = {{ HOME = \"{CANARY}\" }}\n\
             args = [\"--api-key\", \"{CANARY}\", \"--token={CANARY}\", \"--verbose\", \"/srv\"]\n\
             headers_env = {{ Authorization = \"FILES_TOKEN\" }}\n\
             [[mcp.servers]]\nname = \"b\"\n[mcp.servers.env]\nOTHER = \"{CANARY}\"\n"
        ));
        assert!(out.contains(&format!("socks5://{MASK}@proxy:1080")), "{out}");
        assert!(out.contains(&format!("\"--token={MASK}\"")), "{out}");
        assert!(out.contains("\"--verbose\", \"/srv\""), "{out}");
        assert!(out.contains("Authorization = \"FILES_TOKEN\""), "{out}");
    }

    #[test]
    fn comments_are_dropped() {
        let out = shown(&format!(
            "# old key: {CANARY}\n[web] # {CANARY}\nenabled = true # {CANARY}\n\
             args = [ # {CANARY}\n  \"a\", # {CANARY}\n]\nenv = {{ A = \"b\" }} # {CANARY}\n# {CANARY}\n"
        ));
        assert!(out.contains("enabled = true"), "{out}");
        assert!(!out.contains('#'), "{out}");
    }

    #[test]
    fn a_file_that_is_not_toml_is_an_error_not_shown() {
        let error = masked(&format!("token = {CANARY}")).err().unwrap();
        assert!(!error.to_string().contains(CANARY));
    }

    #[test]
    fn messages_quoting_a_masked_value_are_scrubbed() {
        let file = masked(&format!("[llm]\nproxy = \"http://u:{CANARY}@h\"\n")).unwrap();
        let problem = format!("llm.proxy: http://u:{CANARY}@h is not reachable");
        assert_eq!(file.scrub(&problem), format!("llm.proxy: {MASK} is not reachable"));
    }

    #[test]
    fn urls_without_credentials_are_kept() {
        assert_eq!(without_credentials("https://x.org/a@b"), "https://x.org/a@b");
        assert_eq!(without_credentials("plain text"), "plain text");
        assert_eq!(without_credentials("http://u:p@h/"), format!("http://{MASK}@h/"));
    }
}
