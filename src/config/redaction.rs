//! The secrets a configuration names or holds, gathered so that what the
//! daemon shows (the web gateway's answers, the dashboard's documents)
//! can keep them out: a tool's output or the model's reply may quote one.

use std::path::{Path, PathBuf};

use passepartout_gateway::Secrets;

use super::{Config, Secret, expand_home, masked};

/// Where signal-cli keeps its accounts' keys unless `signal.spawn_config_dir`
/// says otherwise.
const SIGNAL_CLI_DATA: &str = "~/.local/share/signal-cli";

/// The files and folders holding secrets the configuration names, wherever
/// they are: the keys' and the token's files, and signal-cli's account data.
/// The sandbox keeps them out of every tool process's reach.
pub fn secret_files(config: &Config) -> Vec<PathBuf> {
    let signal = config.signal.spawn_config_dir.as_deref().map_or_else(
        || expand_home(Path::new(SIGNAL_CLI_DATA)),
        |dir| expand_home(Path::new(dir)),
    );
    named(config)
        .filter_map(|(_, file)| file.map(Path::to_path_buf))
        .chain([signal])
        .collect()
}

/// The secrets the configuration names, each by its variable and its file
/// (either may be unset): the model providers' keys, the Telegram token,
/// the transcriber's and the web search's keys.
fn named(config: &Config) -> impl Iterator<Item = (Option<&str>, Option<&Path>)> {
    let telegram = &config.telegram;
    let transcription = &config.transcription;
    let search = &config.tools.web_search;
    config
        .llm
        .providers
        .iter()
        .map(|p| (p.api_key_env.as_deref(), p.api_key_file.as_deref()))
        .chain([
            (telegram.token_env.as_deref(), telegram.token_file.as_deref()),
            (
                transcription.api_key_env.as_deref(),
                transcription.api_key_file.as_deref(),
            ),
            (search.api_key_env.as_deref(), search.api_key_file.as_deref()),
        ])
}

/// Every secret the configuration names or holds: the model providers'
/// keys, the Telegram token, the transcriber's and the web search's keys
/// (read from their variables and files); the credentials (whole, the user
/// and the password alone, each also percent-decoded) and secret query
/// values of the providers' URLs and proxies and of the MCP servers' URLs;
/// the MCP servers' `env` values, the secrets in their arguments (as the
/// masked configuration hides them) and the values of the variables their
/// `headers_env` names. The web gateway keeps them out of its answers, the
/// admin path out of the dashboard's documents; a reload adds a reloaded
/// file's.
pub fn configured_secrets(config: &Config) -> Secrets {
    let read = named(config)
        .filter_map(|(env, file)| Secret::named(env, file).and_then(Result::ok))
        .map(|secret| secret.expose().to_owned());
    let urls = config
        .llm
        .providers
        .iter()
        .flat_map(|p| std::iter::once(p.base_url.as_str()).chain(p.proxy.as_deref()))
        .chain(config.mcp.servers.iter().filter_map(|s| s.url.as_deref()))
        .flat_map(masked::url_secret_values);
    let servers = config.mcp.servers.iter().flat_map(|server| {
        let headers = server
            .headers_env
            .values()
            .filter_map(|variable| std::env::var(variable).ok());
        server
            .env
            .values()
            .cloned()
            .chain(masked::masked_arguments(&server.args).1)
            .chain(headers)
            .collect::<Vec<_>>()
    });
    Secrets::new(read.chain(urls).chain(servers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_key_file_and_signal_clis_data_are_secret_files() {
        let mut config = Config::default();
        config.llm.providers[0].api_key_file = Some("/srv/keys/model".into());
        config.llm.providers[0].api_key_env = Some("UNUSED_BESIDE_THE_FILE".into());
        config.telegram.token_file = Some("/srv/keys/telegram".into());
        config.tools.web_search.api_key_file = Some("/srv/keys/search".into());
        config.signal.spawn_config_dir = Some("/srv/signal".into());
        let files = secret_files(&config);
        for wanted in [
            "/srv/keys/model",
            "/srv/keys/telegram",
            "/srv/keys/search",
            "/srv/signal",
        ] {
            assert!(files.contains(&PathBuf::from(wanted)), "{wanted}: {files:?}");
        }
        assert_eq!(files.len(), 4, "{files:?}");
        config.signal.spawn_config_dir = None;
        assert!(
            secret_files(&config).contains(&expand_home(Path::new(SIGNAL_CLI_DATA))),
            "signal-cli's own folder by default"
        );
    }
}
