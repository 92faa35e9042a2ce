//! The configuration file as it may be shown to someone looking at the
//! dashboard: every value that could be a secret replaced by [`MASK`], and
//! the comments dropped (a comment may hold an old key; nothing reads it).
//!
//! What is masked: a string under a key that names a secret (`token`,
//! `password`, `api_key`, …), every value of an MCP server's `env` (a
//! program's environment is where its keys go), the credentials in a URL
//! (`http://user:pass@proxy`) and its query values whose names name a
//! secret (`?api_key=…`), an argument given after, or joined to, a flag
//! that names a secret, a `NAME=value` argument whose name names one
//! (`-e GITHUB_TOKEN=…`), and a header's value given after `--header`/`-H`. What is kept: the names of environment
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
                secrets.extend(url_secret_values(text.value()));
                *value = Value::from(shown);
            }
        }
        Value::Array(array) => {
            array.set_trailing("");
            let strings: Option<Vec<String>> = array.iter().map(|e| e.as_str().map(str::to_owned)).collect();
            match strings {
                Some(strings) if name == "args" || secret => {
                    let (shown, found) = if secret {
                        (vec![MASK.to_owned(); strings.len()], strings.clone())
                    } else {
                        masked_arguments(&strings)
                    };
                    secrets.extend(found);
                    for (element, shown) in array.iter_mut().zip(shown) {
                        *element = Value::from(shown);
                    }
                }
                _ => {
                    for element in array.iter_mut() {
                        mask_value(element, name, secret, within, secrets);
                    }
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

/// Whether `argument` is a flag whose next argument is a header
/// (`--header "Authorization: Bearer …"`), whose value may be a secret.
fn flag_names_header(argument: &str) -> bool {
    matches!(argument, "-H" | "--header" | "-header")
}

/// A program's arguments as shown, and the secrets masked in them. Masked:
/// the argument after a flag naming a secret (`--api-key KEY`), the value
/// joined to one (`--token=KEY`), the value of `NAME=value` when the name
/// names a secret (`-e GITHUB_TOKEN=…`), a header's value after `--header`
/// or `-H`, and in any argument the credentials and secret query values of
/// a URL.
pub fn masked_arguments(arguments: &[String]) -> (Vec<String>, Vec<String>) {
    let mut shown = Vec::with_capacity(arguments.len());
    let mut secrets = Vec::new();
    let mut after = After::Nothing;
    for argument in arguments {
        let (this, found): (String, Vec<String>) = match after {
            After::SecretFlag => (MASK.to_owned(), vec![argument.clone()]),
            After::HeaderFlag => masked_header(argument),
            After::Nothing => masked_argument(argument),
        };
        after = if flag_names_secret(argument) && !argument.contains('=') {
            After::SecretFlag
        } else if flag_names_header(argument) {
            After::HeaderFlag
        } else {
            After::Nothing
        };
        if this != *argument {
            secrets.push(argument.clone());
        }
        secrets.extend(found);
        shown.push(this);
    }
    (shown, secrets)
}

/// What the previous argument says of the next.
#[derive(Clone, Copy)]
enum After {
    Nothing,
    SecretFlag,
    HeaderFlag,
}

/// `Name: value` with its value masked (a header's value is where its
/// credentials go); anything else masked whole.
fn masked_header(header: &str) -> (String, Vec<String>) {
    match header.split_once(':') {
        Some((name, value)) if !value.trim().is_empty() => (format!("{name}: {MASK}"), vec![value.trim().to_owned()]),
        _ => (MASK.to_owned(), vec![header.to_owned()]),
    }
}

/// `--api-key=value` or `API_TOKEN=value` with its value masked; a header
/// joined to its flag (`--header=Authorization: …`) with the header's
/// value masked; anything else with the secrets of a URL in it masked.
fn masked_argument(argument: &str) -> (String, Vec<String>) {
    match argument.split_once('=') {
        Some((flag, header)) if flag_names_header(flag) => {
            let (shown, found) = masked_header(header);
            (format!("{flag}={shown}"), found)
        }
        Some((name, value))
            if flag_names_secret(name) || (!name.starts_with('-') && is_name(name) && secret_key(name)) =>
        {
            (format!("{name}={MASK}"), vec![value.to_owned()])
        }
        _ => (without_credentials(argument), url_secret_values(argument)),
    }
}

/// Whether `text` is a variable's name (`GITHUB_TOKEN`, `api.key`), not a
/// URL or a sentence.
fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The shortest user or password kept out alone: a shorter one is a common
/// word (`u`, `admin`) that masking would cut out of every other text, as
/// the answers' redaction leaves out secrets shorter than this too.
const MIN_PART: usize = 8;

/// Every form a secret of a URL in `text` may be quoted in: each of
/// [`url_secrets`], and of credentials (`user:pass`) the user and the
/// password alone too (when at least [`MIN_PART`] long), each also
/// percent-decoded (`p%40ss` → `p@ss`).
pub fn url_secret_values(text: &str) -> Vec<String> {
    let mut values = Vec::new();
    for secret in url_secrets(text) {
        let parts = secret
            .split_once(':')
            .map(|(user, password)| [user, password])
            .into_iter()
            .flatten()
            .filter(|part| part.len() >= MIN_PART);
        for part in std::iter::once(secret).chain(parts) {
            values.push(part.to_owned());
            if let Some(decoded) = percent_decoded(part).filter(|decoded| decoded != part) {
                values.push(decoded);
            }
        }
    }
    values.retain(|value| !value.is_empty());
    values
}

/// `text` with its `%XX` escapes decoded; none when they do not make UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|hex| std::str::from_utf8(hex).ok());
        match hex
            .filter(|_| bytes[i] == b'%')
            .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// `text` with the secrets of a URL in it masked: its credentials
/// (`scheme://user:pass@host`) and the values of query parameters whose
/// names name a secret (`?api_key=…`); anything else as it is.
pub fn without_credentials(text: &str) -> String {
    url_secrets(text)
        .into_iter()
        .fold(text.to_owned(), |text, secret| text.replacen(secret, MASK, 1))
}

/// The secrets of a URL in `text`: the `user:pass` of its authority and
/// the values of its query parameters whose names name a secret.
pub fn url_secrets(text: &str) -> Vec<&str> {
    let Some(scheme_end) = text.find("://") else {
        return Vec::new();
    };
    let authority_start = scheme_end + 3;
    let rest = &text[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let mut found: Vec<&str> = rest[..authority_end]
        .rfind('@')
        .map(|at| &rest[..at])
        .filter(|credentials| !credentials.is_empty())
        .into_iter()
        .collect();
    if let Some(query_start) = rest.find('?') {
        let query = &rest[query_start + 1..];
        let query = query.split('#').next().unwrap_or("");
        found.extend(
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .filter(|(name, value)| secret_key(name) && !value.is_empty())
                .map(|(_, value)| value),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_credentials_are_secret_whole_in_parts_and_decoded() {
        let values =
            url_secret_values("https://deploy-user:s3cr%40t-pass%2Fx@proxy.example:3128/?api_key=k%2By-123456");
        for wanted in [
            "deploy-user:s3cr%40t-pass%2Fx",
            "deploy-user:s3cr@t-pass/x",
            "deploy-user",
            "s3cr%40t-pass%2Fx",
            "s3cr@t-pass/x",
            "k%2By-123456",
            "k+y-123456",
        ] {
            assert!(values.contains(&wanted.to_owned()), "{wanted}: {values:?}");
        }
        assert_eq!(percent_decoded("100%"), Some("100%".into()), "a lone % is kept");
        let short = url_secret_values("https://u:canary-pw-1234@a.example");
        assert!(!short.contains(&"u".to_owned()), "too short to hide alone: {short:?}");
        assert!(short.contains(&"canary-pw-1234".to_owned()), "{short:?}");
        assert_eq!(percent_decoded("%ff"), None, "not UTF-8");
    }

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
    fn environment_assignments_headers_and_url_queries_in_arguments_are_masked() {
        let out = shown(&format!(
            "[[mcp.servers]]\nname = \"gh\"\n\
             args = [\"-e\", \"GITHUB_TOKEN={CANARY}\", \"--header\", \"Authorization: Bearer {CANARY}\", \
             \"-H=X-Api-Key: {CANARY}\", \"GITHUB_HOST=github.com\", \"https://x.org/a?api_key={CANARY}&page=2\"]\n\
             url = \"https://mcp.x/sse?api_key={CANARY}&v=1\"\n"
        ));
        assert!(out.contains(&format!("\"GITHUB_TOKEN={MASK}\"")), "{out}");
        assert!(out.contains(&format!("\"Authorization: {MASK}\"")), "{out}");
        assert!(out.contains("\"GITHUB_HOST=github.com\""), "{out}");
        assert!(out.contains(&format!("https://mcp.x/sse?api_key={MASK}&v=1")), "{out}");
        assert!(out.contains(&format!("a?api_key={MASK}&page=2")), "{out}");
    }

    #[test]
    fn arguments_give_up_their_secrets_to_scrub_with() {
        let args = ["-e", "API_TOKEN=abc-canary", "--header", "Authorization: Bearer xyz"].map(String::from);
        let (shown, secrets) = masked_arguments(&args);
        assert_eq!(shown[1], format!("API_TOKEN={MASK}"));
        assert!(secrets.contains(&"abc-canary".to_owned()), "{secrets:?}");
        assert!(secrets.contains(&"Bearer xyz".to_owned()), "{secrets:?}");
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
