//! Runs a real daemon (store, socket, pipeline) in a temp dir against a
//! [`FakeLlm`], and talks to it with the real socket client.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use passepartout::config::{Config, ProviderConfig};
use passepartout::foundation::data_dir::DataDirError;
use passepartout::safety::tools::Tool;
use passepartout::store::StoreError;
use passepartout::{Daemon, Extensions, StartError};
use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, SendOutcome, ServerFrame};

use super::fake_llm::FakeLlm;

/// How long a test waits for any one event before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// A configuration for a daemon in `dir` using the model at `llm_url`.
pub fn config(dir: &Path, llm_url: &str) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    config.pipeline.shutdown_grace_s = 5;
    config.llm.providers = vec![ProviderConfig {
        name: "fake".into(),
        base_url: llm_url.to_owned(),
        model: "fake-model".into(),
        timeout_s: 10,
        ..ProviderConfig::default()
    }];
    config
}

pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub config: Config,
    pub daemon: Option<Daemon>,
}

impl TestDaemon {
    pub async fn start(llm: &FakeLlm) -> TestDaemon {
        Self::start_with(llm, |_| {}, Vec::new()).await
    }

    pub async fn start_with(llm: &FakeLlm, adjust: impl FnOnce(&mut Config), tools: Vec<Arc<dyn Tool>>) -> TestDaemon {
        let extensions = Extensions {
            tools,
            ..Extensions::default()
        };
        Self::start_extended(llm, adjust, extensions).await
    }

    /// A daemon with `extensions` plugged in (gateways, fetchers, tools).
    pub async fn start_extended(llm: &FakeLlm, adjust: impl FnOnce(&mut Config), extensions: Extensions) -> TestDaemon {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), &llm.base_url());
        adjust(&mut config);
        let daemon = Daemon::start_with(config.clone(), extensions)
            .await
            .expect("daemon starts");
        TestDaemon {
            dir,
            config,
            daemon: Some(daemon),
        }
    }

    /// A daemon run from a configuration file, as `passepartout run` reads
    /// it: the harness's settings (its data directory, `llm` as its model,
    /// no backups, a short grace), then `extra` (TOML tables, none of
    /// `[store]`, `[pipeline]` or `[[llm.providers]]`). It runs on what
    /// the file says, so a reload of the file unchanged changes nothing;
    /// `extensions.config_file` is the file. Returns the daemon and the file.
    pub async fn start_from_file(
        llm: &FakeLlm,
        extra: &str,
        mut extensions: Extensions,
    ) -> (TestDaemon, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let harness = config(dir.path(), &llm.base_url());
        let provider = &harness.llm.providers[0];
        std::fs::write(
            &file,
            format!(
                "data_dir = {data:?}\n\n[store]\nbackup_every_s = {backups}\n\n\
                 [pipeline]\nshutdown_grace_s = {grace}\n\n\
                 [[llm.providers]]\nname = {name:?}\nbase_url = {url:?}\nmodel = {model:?}\ntimeout_s = {timeout}\n\n\
                 {extra}",
                data = harness.data_dir.display().to_string(),
                backups = harness.store.backup_every_s,
                grace = harness.pipeline.shutdown_grace_s,
                name = provider.name,
                url = provider.base_url,
                model = provider.model,
                timeout = provider.timeout_s,
            ),
        )
        .expect("the daemon's config is written");
        let config = passepartout::config::load(Some(&file), Some(Default::default())).expect("the file reads");
        extensions.config_file = Some(file.clone());
        let daemon = Daemon::start_with(config.clone(), extensions)
            .await
            .expect("daemon starts");
        let daemon = TestDaemon {
            dir,
            config,
            daemon: Some(daemon),
        };
        (daemon, file)
    }

    /// A config file for the command line beside this daemon: its data
    /// directory, and `llm` as its model, as its own file would say.
    pub fn cli_config(&self, llm: &FakeLlm) -> std::path::PathBuf {
        let file = self.dir.path().join("cli.toml");
        std::fs::write(
            &file,
            format!(
                "data_dir = {data:?}\n[[llm.providers]]\nname = \"fake\"\nbase_url = {url:?}\nmodel = \"fake-model\"\n",
                data = self.config.data_dir.display().to_string(),
                url = llm.base_url(),
            ),
        )
        .expect("the command line's config is written");
        file
    }

    /// Stops the daemon in order (as SIGTERM would).
    pub async fn stop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            daemon.shutdown().await.expect("clean shutdown");
        }
    }

    /// Starts the daemon again on the same data directory. sled lets go of
    /// the store's files a moment after its last handle is dropped, and a
    /// child another test is starting holds a copy of every descriptor (the
    /// data directory's lock file too) until it has exec'd, so a store or a
    /// data directory that cannot be taken yet is tried again, within [`WAIT`].
    pub async fn restart(&mut self, tools: Vec<Arc<dyn Tool>>) {
        self.stop().await;
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let extensions = Extensions {
                tools: tools.clone(),
                ..Extensions::default()
            };
            match Daemon::start_with(self.config.clone(), extensions).await {
                Ok(daemon) => {
                    self.daemon = Some(daemon);
                    return;
                }
                Err(StartError::Store(StoreError::Open { .. }) | StartError::DataDir(DataDirError::InUse { .. }))
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::task::yield_now().await;
                }
                Err(error) => panic!("daemon restarts: {error:?}"),
            }
        }
    }

    pub async fn client(&self, chat: &str) -> Client {
        let chat = ChatId::new(chat).unwrap();
        tokio::time::timeout(WAIT, Client::connect(self.config.socket_path(), Some(chat)))
            .await
            .expect("connect in time")
            .expect("connect")
    }
}

/// Sends `text` and returns its message id.
pub async fn send(client: &mut Client, text: &str) -> String {
    let (id, outcome) = tokio::time::timeout(WAIT, client.send(None, text, None))
        .await
        .expect("ack in time")
        .expect("send");
    assert_eq!(outcome, SendOutcome::Accepted);
    id
}

/// The next reply to message `id`, whatever else arrives meanwhile.
async fn next_reply(client: &mut Client, id: &str) -> (ReplyKind, String) {
    loop {
        if let ServerFrame::Reply {
            in_reply_to: Some(answered),
            text,
            kind,
            ..
        } = client.next_event().await.expect("connection stays up")
            && answered == id
        {
            return (kind, text);
        }
    }
}

/// Waits for the reply to message `id`.
pub async fn reply_to(client: &mut Client, id: &str) -> (ReplyKind, String) {
    tokio::time::timeout(WAIT, next_reply(client, id))
        .await
        .unwrap_or_else(|_| panic!("no reply to {id} within {WAIT:?}"))
}

/// Every reply to message `id` up to the first that is not a notice.
pub async fn replies(client: &mut Client, id: &str) -> Vec<(ReplyKind, String)> {
    let collect = async {
        let mut seen = Vec::new();
        loop {
            let (kind, text) = next_reply(client, id).await;
            seen.push((kind, text));
            if kind != ReplyKind::Notice {
                return seen;
            }
        }
    };
    tokio::time::timeout(WAIT, collect)
        .await
        .unwrap_or_else(|_| panic!("no final reply to {id} within {WAIT:?}"))
}

/// Sends `text` and waits for its reply.
pub async fn ask(client: &mut Client, text: &str) -> (ReplyKind, String) {
    let id = send(client, text).await;
    reply_to(client, &id).await
}

/// The text of every message of the given role in a recorded chat request.
pub fn texts_of(request: &serde_json::Value, role: &str) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == role)
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}
