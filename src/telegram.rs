//! The Telegram gateway as the daemon runs it: its settings from `[telegram]`
//! (the token read from the environment or a file) and its polling offset
//! kept in the store's `cursors` tree, durably.

use async_trait::async_trait;
use passepartout_telegram::{GATEWAY_ID, OffsetStore, TelegramSettings};

use crate::config::{Config, Secret, SecretError};
use crate::store::Store;

/// The gateway's settings, with the token read from where `[telegram]` says.
pub fn settings(config: &Config) -> Result<TelegramSettings, SecretError> {
    let telegram = &config.telegram;
    let token = Secret::named(telegram.token_env.as_deref(), telegram.token_file.as_deref())
        .unwrap_or_else(|| Secret::from_env(crate::config::DEFAULT_TELEGRAM_TOKEN_ENV, |n| std::env::var(n).ok()))?;
    let mut settings = TelegramSettings::new(token.expose());
    settings.api_url = telegram.api_url.trim_end_matches('/').to_owned();
    settings.group_mode = telegram.group_mode;
    settings.poll_timeout_s = telegram.poll_timeout_s;
    Ok(settings)
}

/// The polling offset in the store's `cursors` tree.
pub struct StoreOffsets {
    store: Store,
}

impl StoreOffsets {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

#[async_trait]
impl OffsetStore for StoreOffsets {
    fn load(&self) -> Option<i64> {
        let bytes = self.store.cursor(GATEWAY_ID).ok()??;
        Some(i64::from_be_bytes(bytes.as_slice().try_into().ok()?))
    }

    async fn save(&self, offset: i64) -> Result<(), String> {
        self.store
            .set_cursor(GATEWAY_ID, &offset.to_be_bytes())
            .await
            .map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests_support::open_temp;

    #[tokio::test]
    async fn the_offset_survives_in_the_store() {
        let (dir, store) = open_temp();
        let offsets = StoreOffsets::new(store.clone());
        assert_eq!(offsets.load(), None);
        offsets.save(700_000_042).await.unwrap();
        drop((offsets, store));
        let store = crate::store::tests_support::reopen(&dir.path().join("store"));
        assert_eq!(StoreOffsets::new(store).load(), Some(700_000_042));
    }

    #[test]
    fn the_token_comes_from_the_environment_or_a_file_and_is_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "123:secret-token\n").unwrap();
        let mut config = Config::default();
        config.telegram.token_env = None;
        config.telegram.token_file = Some(file);
        config.telegram.api_url = "http://127.0.0.1:9/".into();
        let settings = settings(&config).unwrap();
        assert_eq!(settings.token, "123:secret-token");
        assert_eq!(settings.api_url, "http://127.0.0.1:9");
        assert!(!format!("{settings:?}").contains("secret-token"));
    }
}
