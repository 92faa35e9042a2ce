//! The configuration file the wizard writes: a header, then one section per
//! step, each setting with a comment saying what it is. Only what was
//! answered is written; everything else keeps the defaults that
//! `passepartout config example` prints.

use std::path::{Path, PathBuf};

use crate::config::ProviderKind;

/// Where a secret is for the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretRef {
    /// There is none (a local model without a key).
    None,
    /// A file of mode 0600.
    File(PathBuf),
    /// An environment variable the daemon is started with.
    Env(String),
}

/// The `[[llm.providers]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSection {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub key: SecretRef,
}

/// The `[telegram]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct TelegramSection {
    pub api_url: String,
    /// A file or an environment variable; never [`SecretRef::None`].
    pub token: SecretRef,
    /// The owner's user id: allowed to talk, and the approver.
    pub owner: i64,
}

/// A TOML basic string. JSON's string escapes are a subset of TOML's, so
/// serde_json writes one that TOML reads back unchanged.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

fn path(path: &Path) -> String {
    quoted(&path.to_string_lossy())
}

/// The whole file: the header, then `sections` in order.
pub fn document(sections: &[String]) -> String {
    let mut text = String::from(
        "# passepartout's configuration, written by `passepartout setup`.\n\
         # Every setting not written here keeps its default; `passepartout config\n\
         # example` prints them all, documented. Check the file with\n\
         # `passepartout check-config`.\n\
         # Secrets are never written here: the settings name a file (mode 0600)\n\
         # or an environment variable that holds them.\n",
    );
    for section in sections {
        text.push('\n');
        text.push_str(section);
    }
    text
}

/// The model provider.
pub fn model(section: &ModelSection) -> String {
    let kind = match section.kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    };
    let mut text = format!(
        "# The language model. More [[llm.providers]] entries may follow: they are\n\
         # tried in order when one is down.\n\
         [[llm.providers]]\n\
         # A short name, shown by `status` and `doctor`.\n\
         name = {name}\n\
         # \"openai\": any OpenAI-compatible server (Ollama, llama.cpp, vLLM, OpenAI);\n\
         # \"anthropic\": the Anthropic Messages API.\n\
         kind = {kind}\n\
         # The API's base URL, up to and including /v1.\n\
         base_url = {url}\n\
         # The model asked.\n\
         model = {model}\n",
        name = quoted(&section.name),
        kind = quoted(kind),
        url = quoted(&section.base_url),
        model = quoted(&section.model),
    );
    match &section.key {
        SecretRef::None => text.push_str("# No API key: the server takes none.\n"),
        SecretRef::File(file) => text.push_str(&format!(
            "# The file holding the API key (mode 0600).\napi_key_file = {}\n",
            path(file)
        )),
        SecretRef::Env(name) => text.push_str(&format!(
            "# The environment variable holding the API key, set where the daemon runs.\napi_key_env = {}\n",
            quoted(name)
        )),
    }
    text
}

/// The Telegram bot.
pub fn telegram(section: &TelegramSection) -> String {
    let token = match &section.token {
        SecretRef::File(file) => format!(
            "# The file holding the bot token from @BotFather (mode 0600).\ntoken_file = {}\n",
            path(file)
        ),
        SecretRef::Env(name) => format!(
            "# The environment variable holding the bot token, set where the daemon runs.\ntoken_env = {}\n",
            quoted(name)
        ),
        SecretRef::None => unreachable!("a bot always has a token"),
    };
    format!(
        "# The Telegram bot.\n\
         [telegram]\n\
         enabled = true\n\
         {token}\
         # The Bot API server.\n\
         api_url = {url}\n\
         # Telegram user ids that may talk to the bot; anyone else gets a pairing\n\
         # code an owner may approve (`passepartout pair approve CODE`).\n\
         allowed_users = [{owner}]\n\
         # Who may approve the assistant's actions (and pairing codes).\n\
         approvers = [{owner}]\n",
        url = quoted(&section.api_url),
        owner = section.owner,
    )
}

/// How the daemon reaches signal-cli.
pub enum SignalReach<'a> {
    /// It starts this program as its own child, with this data folder
    /// (signal-cli's own default when none).
    Spawn { program: &'a str, data: Option<&'a str> },
    /// It connects to the multi-account daemon here.
    Endpoint(&'a str),
}

/// The web dashboard, on this machine's loopback address.
pub fn web() -> String {
    format!(
        "# The web dashboard: the overview, a chat, the approvals and an\n\
         # OpenAI-compatible API under /v1, on this machine only.\n\
         # `passepartout web --open` signs this machine's browser in.\n\
         [web]\n\
         enabled = true\n\
         listen = {}\n",
        quoted(passepartout_web::DEFAULT_LISTEN)
    )
}

/// Signal, on the person's own account.
pub fn signal(account: &str, reach: SignalReach<'_>) -> String {
    let reach = match reach {
        SignalReach::Spawn { program, data } => {
            let data = data.map_or_else(String::new, |dir| {
                format!(
                    "# signal-cli's data folder, where the account was linked.\nspawn_config_dir = {}\n",
                    quoted(dir)
                )
            });
            format!(
                "# The daemon starts signal-cli itself, as its own child.\nspawn = true\nspawn_program = {}\n{data}",
                quoted(program)
            )
        }
        SignalReach::Endpoint(endpoint) => format!(
            "# The signal-cli daemon (started without -a) the assistant connects to.\n\
             endpoint = {}\nmulti_account = true\n",
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
    use crate::config::{Config, load};

    fn loaded(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, text).unwrap();
        load(Some(&file), Some(Default::default())).unwrap_or_else(|error| panic!("{error}\n{text}"))
    }

    fn a_model(key: SecretRef) -> ModelSection {
        ModelSection {
            name: "local".into(),
            kind: ProviderKind::Openai,
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3.2 \"quoted\" \\ ünï".into(),
            key,
        }
    }

    #[test]
    fn the_model_section_round_trips_through_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("local \"odd\".key");
        std::fs::write(&key_file, "sk-1").unwrap();
        let config = loaded(&document(&[model(&a_model(SecretRef::File(key_file.clone())))]));
        let provider = &config.llm.providers[0];
        assert_eq!(config.llm.providers.len(), 1);
        assert_eq!(provider.name, "local");
        assert_eq!(provider.kind, ProviderKind::Openai);
        assert_eq!(provider.model, "llama3.2 \"quoted\" \\ ünï");
        assert_eq!(provider.api_key_file.as_deref(), Some(key_file.as_path()));
        assert_eq!(provider.api_key_env, None);

        let config = loaded(&document(&[model(&ModelSection {
            kind: ProviderKind::Anthropic,
            key: SecretRef::Env("ANTHROPIC_API_KEY".into()),
            ..a_model(SecretRef::None)
        })]));
        assert_eq!(config.llm.providers[0].kind, ProviderKind::Anthropic);
        assert_eq!(
            config.llm.providers[0].api_key_env.as_deref(),
            Some("ANTHROPIC_API_KEY")
        );
        let config = loaded(&document(&[model(&a_model(SecretRef::None))]));
        assert_eq!(config.llm.providers[0].api_key_env, None);
        assert_eq!(config.llm.providers[0].api_key_file, None);
    }

    #[test]
    fn the_signal_section_round_trips_for_a_child_or_a_daemon() {
        let spawned = signal(
            "+15550000077",
            SignalReach::Spawn {
                program: "/opt/signal-cli/bin/signal-cli",
                data: Some("/var/lib/passepartout/signal-cli"),
            },
        );
        let config = loaded(&document(&[model(&a_model(SecretRef::None)), spawned]));
        let section = &config.signal;
        assert!(section.enabled && section.note_to_self && section.spawn);
        assert_eq!(section.account, "+15550000077");
        assert_eq!(section.spawn_program, "/opt/signal-cli/bin/signal-cli");
        assert_eq!(
            section.spawn_config_dir.as_deref(),
            Some("/var/lib/passepartout/signal-cli")
        );
        let through = signal("+15550000077", SignalReach::Endpoint("tcp:127.0.0.1:7583"));
        let config = loaded(&document(&[model(&a_model(SecretRef::None)), through]));
        assert!(!config.signal.spawn && config.signal.multi_account);
        assert_eq!(config.signal.endpoint, "tcp:127.0.0.1:7583");
    }

    #[test]
    fn the_telegram_section_round_trips_with_the_owner_as_approver() {
        let section = TelegramSection {
            api_url: "http://127.0.0.1:8081".into(),
            token: SecretRef::File("/etc/passepartout/telegram.token".into()),
            owner: 123_456_789,
        };
        let text = document(&[model(&a_model(SecretRef::None)), telegram(&section)]);
        let config = loaded(&text);
        assert!(config.telegram.enabled);
        assert_eq!(config.telegram.allowed_users, vec![123_456_789]);
        assert_eq!(config.telegram.approver_ids(), &[123_456_789]);
        assert_eq!(config.telegram.api_url, "http://127.0.0.1:8081");
        assert_eq!(
            config.telegram.token_file.as_deref(),
            Some(Path::new("/etc/passepartout/telegram.token"))
        );
        let by_env = loaded(&document(&[telegram(&TelegramSection {
            token: SecretRef::Env("MY_BOT_TOKEN".into()),
            ..section
        })]));
        assert_eq!(by_env.telegram.token_env.as_deref(), Some("MY_BOT_TOKEN"));
        assert_eq!(by_env.telegram.token_file, None);
    }

    #[test]
    fn every_setting_written_has_a_comment_above_it() {
        let text = document(&[
            model(&a_model(SecretRef::Env("OPENAI_API_KEY".into()))),
            telegram(&TelegramSection {
                api_url: "https://api.telegram.org".into(),
                token: SecretRef::Env("TELEGRAM_BOT_TOKEN".into()),
                owner: 42,
            }),
        ]);
        assert!(text.starts_with("# passepartout's configuration"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let setting = !line.starts_with('#') && line.contains(" = ");
            // `enabled = true` speaks for itself under its section's comment.
            if setting && !line.starts_with("enabled") {
                assert!(
                    lines[index - 1].starts_with('#'),
                    "no comment above {line:?} in:\n{text}"
                );
            }
        }
    }
}
