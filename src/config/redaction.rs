//! The secrets a configuration names or holds, gathered so that what the
//! daemon shows (the web gateway's answers, the dashboard's documents)
//! can keep them out: a tool's output or the model's reply may quote one.

use std::path::{Path, PathBuf};

use passepartout_gateway::Secrets;

use super::{Config, Secret, masked};

/// Where secrets are kept: each one by the variable and the file that may
/// hold it (the file read when both are named, as [`Secret::named`] reads
/// them), and the files or folders holding secrets that another program
/// reads (signal-cli's account data). The configuration's own are
/// [`SecretPlaces::of`]; every gateway declares its own, and the daemon
/// gathers them all, so that a new gateway's cannot be missed.
#[derive(Clone, Debug, Default)]
pub struct SecretPlaces {
    /// Each secret read, by its variable and its file (either may be unset).
    named: Vec<(Option<String>, Option<PathBuf>)>,
    /// Files and folders holding secrets read by another program.
    files: Vec<PathBuf>,
}

impl SecretPlaces {
    /// The secrets `config` names for the core itself: the model
    /// providers' keys, the transcriber's and the web search's keys.
    pub fn of(config: &Config) -> Self {
        let transcription = &config.transcription;
        let search = &config.tools.web_search;
        let mut places = Self::default();
        for provider in &config.llm.providers {
            places = places.named(provider.api_key_env.as_deref(), provider.api_key_file.as_deref());
        }
        places
            .named(
                transcription.api_key_env.as_deref(),
                transcription.api_key_file.as_deref(),
            )
            .named(search.api_key_env.as_deref(), search.api_key_file.as_deref())
    }

    /// These and a secret read from the variable `env` or the file `file`.
    pub fn named(mut self, env: Option<&str>, file: Option<&Path>) -> Self {
        self.named.push((env.map(str::to_owned), file.map(Path::to_path_buf)));
        self
    }

    /// These and the file or folder `file`, whose secrets another program reads.
    pub fn file(mut self, file: PathBuf) -> Self {
        self.files.push(file);
        self
    }

    /// These and `more`.
    pub fn and(mut self, more: SecretPlaces) -> Self {
        self.named.extend(more.named);
        self.files.extend(more.files);
        self
    }

    /// The files and folders holding these secrets, wherever they are: the
    /// files named for each, and those another program reads. The sandbox
    /// keeps them out of every tool process's reach.
    pub fn files(&self) -> Vec<PathBuf> {
        self.named
            .iter()
            .filter_map(|(_, file)| file.clone())
            .chain(self.files.iter().cloned())
            .collect()
    }

    /// The secrets themselves, read from their variables and files; those
    /// that cannot be read are left out.
    fn read(&self) -> impl Iterator<Item = String> {
        self.named
            .iter()
            .filter_map(|(env, file)| Secret::named(env.as_deref(), file.as_deref()).and_then(Result::ok))
            .map(|secret| secret.expose().to_owned())
    }
}

/// Every secret the configuration names or holds: those kept in `places`
/// (the configuration's own and every gateway's, read from their
/// variables and files); the credentials (whole, the user
/// and the password alone, each also percent-decoded) and secret query
/// values of the providers' URLs and proxies and of the MCP servers' URLs;
/// the MCP servers' `env` values, the secrets in their arguments (as the
/// masked configuration hides them) and the values of the variables their
/// `headers_env` names. The web gateway keeps them out of its answers, the
/// admin path out of the dashboard's documents; a reload adds a reloaded
/// file's.
pub fn configured_secrets(config: &Config, places: &SecretPlaces) -> Secrets {
    let read = places.read();
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
    fn every_named_key_file_and_every_file_added_are_secret_files() {
        let mut config = Config::default();
        config.llm.providers[0].api_key_file = Some("/srv/keys/model".into());
        config.llm.providers[0].api_key_env = Some("UNUSED_BESIDE_THE_FILE".into());
        config.tools.web_search.api_key_file = Some("/srv/keys/search".into());
        let places = SecretPlaces::of(&config)
            .named(Some("TOKEN"), Some(Path::new("/srv/keys/gateway")))
            .file("/srv/data".into());
        let files = places.files();
        for wanted in ["/srv/keys/model", "/srv/keys/search", "/srv/keys/gateway", "/srv/data"] {
            assert!(files.contains(&PathBuf::from(wanted)), "{wanted}: {files:?}");
        }
        assert_eq!(files.len(), 4, "{files:?}");
    }

    #[test]
    fn a_secret_kept_in_a_file_is_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cr3t-gateway-token\n").unwrap();
        let places = SecretPlaces::default().named(None, Some(&file));
        let shown = configured_secrets(&Config::default(), &places).redact("the token is s3cr3t-gateway-token");
        assert!(!shown.contains("s3cr3t-gateway-token"), "{shown}");
    }
}
