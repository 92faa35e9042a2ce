//! The configuration of a daemon benchmarked through Telegram: its data in
//! a folder, one model provider, the socket off, and Telegram on against a
//! fake Bot API with the bot token in a file, polling a second at a time.

use std::path::Path;

use passepartout::config::{Config, ProviderConfig};

/// Data in `dir` (the token file too), the model `model` at `llm_url`, the
/// bot `token` at `api_url`, `person` allowed.
pub fn telegram_config(dir: &Path, model: &str, llm_url: String, token: &str, api_url: String, person: i64) -> Config {
    let token_file = dir.join("token");
    std::fs::write(&token_file, token).expect("token file");
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Default::default()
    };
    config.store.backup_every_s = 0;
    config.llm.providers = vec![ProviderConfig {
        name: model.into(),
        base_url: llm_url,
        model: model.into(),
        timeout_s: 60,
        ..Default::default()
    }];
    config.socket.enabled = false;
    config.telegram.enabled = true;
    config.telegram.token_env = None;
    config.telegram.token_file = Some(token_file);
    config.telegram.api_url = api_url;
    config.telegram.allowed_users = vec![person];
    config.telegram.poll_timeout_s = 1;
    config
}
