//! The Telegram gateway as a component: its settings from `[telegram]` (the
//! token read from the environment or a file), its polling offset kept in
//! the store's `cursors` tree, durably, the user and chat ids that may talk
//! and approve, and `doctor`'s getMe. It fetches the files of its messages
//! (voice notes, photos, documents) too.
//!
//! Beside the component, in this folder: `setup`, the wizard's Telegram
//! step and its flags, which writes its `section`, and `check`, the bot's
//! `getMe` that setup and the dashboard's Channels page run on a token.

pub mod check;
mod section;
pub mod setup;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{ChatId, Draft, GatewayId};
use passepartout_telegram::config::DEFAULT_TELEGRAM_TOKEN_ENV;
use passepartout_telegram::pacing::Limits;
use passepartout_telegram::{GATEWAY_ID, OffsetStore, TelegramConfig, TelegramGateway, TelegramSettings};

use super::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, Upload};
use crate::config::{Config, Secret, SecretError, SecretPlaces, bridges, unreadable_secret};
use crate::foundation::checkup::{Check, Level};
use crate::store::Store;

/// How long `doctor` waits on getMe.
const CHECK_LIMIT: Duration = Duration::from_secs(15);

/// `[telegram]`.
pub struct Telegram {
    section: TelegramConfig,
    /// `[media] max_photo_bytes`: the largest photo size worth taking.
    photo_max_bytes: u64,
    /// Its groups joined to chats elsewhere (`[[bridges]]`).
    bridged: BTreeSet<i64>,
}

impl Telegram {
    pub fn new(config: &Config) -> Self {
        Self {
            section: config.telegram.clone(),
            photo_max_bytes: config.media.max_photo_bytes,
            bridged: bridges::bridged_on(&config.bridges, GATEWAY_ID)
                .iter()
                .filter_map(|chat| chat.as_str().parse().ok())
                .collect(),
        }
    }

    /// The gateway's settings, with the token read from where `[telegram]` says.
    pub fn settings(&self) -> Result<TelegramSettings, SecretError> {
        let section = &self.section;
        let token = Secret::named(section.token_env.as_deref(), section.token_file.as_deref())
            .unwrap_or_else(|| Secret::from_env(DEFAULT_TELEGRAM_TOKEN_ENV, |n| std::env::var(n).ok()))?;
        let mut settings = TelegramSettings::new(token.expose());
        settings.api_url = section.api_url.trim_end_matches('/').to_owned();
        settings.group_mode = section.group_mode;
        settings.bridged = self.bridged.clone();
        settings.poll_timeout_s = section.poll_timeout_s;
        settings.proxy = section.proxy.clone();
        settings.photo_max_bytes = self.photo_max_bytes;
        settings.pacing = Limits::with_group_per_minute(section.group_messages_per_minute);
        Ok(settings)
    }
}

fn ids(list: &[i64]) -> Vec<String> {
    list.iter().map(i64::to_string).collect()
}

#[async_trait]
impl GatewayComponent for Telegram {
    fn id(&self) -> GatewayId {
        GatewayId::new(GATEWAY_ID).expect("Telegram's gateway id is valid")
    }

    fn enabled(&self) -> bool {
        self.section.enabled
    }

    fn name(&self) -> String {
        "Telegram".to_owned()
    }

    fn secrets(&self) -> SecretPlaces {
        SecretPlaces::default().named(self.section.token_env.as_deref(), self.section.token_file.as_deref())
    }

    fn bridges(&self) -> bool {
        true
    }

    fn bridge_problem(&self, chat: &ChatId) -> Option<String> {
        let Ok(id) = chat.as_str().parse::<i64>() else {
            return Some("not a Telegram chat id (a group's is a negative number)".to_owned());
        };
        if id >= 0 {
            return Some("a private chat cannot be bridged, only a group".to_owned());
        }
        (!self.section.allowed_chats.contains(&id))
            .then(|| "the group is not in telegram.allowed_chats, so nothing of it reaches me".to_owned())
    }

    fn talkers(&self) -> Roster {
        Roster::Listed {
            users: ids(&self.section.allowed_users),
            chats: ids(&self.section.allowed_chats),
        }
    }

    fn deciders(&self) -> Roster {
        Roster::Listed {
            users: ids(self.section.approver_ids()),
            chats: Vec::new(),
        }
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_telegram::SURFACE
    }

    fn problems(&self) -> Vec<String> {
        self.section.problems()
    }

    /// The bot token, named by a variable or a file, cannot be read.
    fn start_problems(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        let section = &self.section;
        // Neither key set is one of the section's own problems.
        match Secret::named_in(section.token_env.as_deref(), section.token_file.as_deref(), lookup) {
            Some(Err(error)) => vec![unreadable_secret("telegram", "the bot token from @BotFather", &error)],
            _ => Vec::new(),
        }
    }

    /// Who may talk and approve.
    fn live_keys(&self) -> Vec<&'static str> {
        vec!["telegram.allowed_users", "telegram.allowed_chats", "telegram.approvers"]
    }

    /// What the Bot API takes from a bot.
    fn upload(&self) -> Upload {
        Upload {
            max_bytes: passepartout_telegram::MAX_UPLOAD_BYTES,
            platform: "Telegram",
            copied: true,
        }
    }

    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError> {
        let settings = self.settings().map_err(|error| BuildError::new("Telegram", error))?;
        let telegram = TelegramGateway::new(settings, Arc::new(StoreOffsets::new(with.store.clone())));
        Ok(Built {
            listen: telegram.clone(),
            deliver: telegram.clone(),
            draft: self
                .section
                .stream
                .unwrap_or(with.stream)
                .then(|| telegram.clone() as Arc<dyn Draft>),
            fetch: Some(telegram),
            local_path: None,
        })
    }

    /// getMe with the configured token: the bot's name, or the exact failure.
    async fn check(&self) -> Option<Checked> {
        if !self.section.enabled {
            return None;
        }
        let settings = match self.settings() {
            Ok(settings) => settings,
            Err(error) => {
                return Some(
                    Check::new(
                        "telegram",
                        Level::Failed,
                        error.to_string(),
                        Some("set the bot token (telegram.token_env or telegram.token_file)".into()),
                    )
                    .into(),
                );
            }
        };
        let check = match tokio::time::timeout(CHECK_LIMIT, passepartout_telegram::checked(&settings)).await {
            // A bridged group shows the bot only what addresses it.
            Ok(Ok(bot)) if !self.bridged.is_empty() && !bot.reads_all_group_messages => Check::new(
                "telegram",
                Level::Degraded,
                format!(
                    "{} answers at {}, but its privacy mode is on: in a bridged group it sees only what addresses it, \
                     so the rest is not relayed",
                    bot.name, settings.api_url
                ),
                Some(
                    "turn the privacy mode off with @BotFather (/setprivacy), then remove and add the bot to the group"
                        .into(),
                ),
            ),
            Ok(Ok(bot)) => Check::new(
                "telegram",
                Level::Ok,
                format!("{} answers at {}", bot.name, settings.api_url),
                None,
            ),
            Ok(Err(error)) => Check::new(
                "telegram",
                Level::Failed,
                error,
                Some("check the token with @BotFather, and telegram.api_url".into()),
            ),
            Err(_) => Check::new(
                "telegram",
                Level::Failed,
                format!("{} did not answer within {} s", settings.api_url, CHECK_LIMIT.as_secs()),
                Some("check the network, or telegram.api_url".into()),
            ),
        };
        Some(check.into())
    }
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
        let settings = Telegram::new(&config).settings().unwrap();
        assert_eq!(settings.token, "123:secret-token");
        assert_eq!(settings.api_url, "http://127.0.0.1:9");
        assert!(!format!("{settings:?}").contains("secret-token"));
    }

    #[tokio::test]
    async fn the_built_gateway_fetches_the_media_of_its_messages() {
        let (_store_dir, store) = open_temp();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "123:secret-token\n").unwrap();
        let mut config = Config::default();
        config.telegram.token_env = None;
        config.telegram.token_file = Some(file);
        let (admin, _requests) = passepartout_admin::Admin::channel(1);
        let built = Telegram::new(&config)
            .build(&BuildContext {
                store,
                admin,
                clock: crate::foundation::clock::Clock::start(),
                stream: true,
                secrets: Default::default(),
            })
            .await
            .unwrap();
        let (gateway, _fetch) = built.fetcher().expect("Telegram fetches its messages' files");
        assert_eq!(gateway.as_str(), GATEWAY_ID);
    }

    #[test]
    fn a_token_file_in_the_config_file_is_used_beside_the_default_variable() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "123:from-the-file\n").unwrap();
        // As the README shows it: only `token_file`, so `token_env` keeps
        // its default, which no TOML can unset, and the variable is not set.
        let toml = dir.path().join("config.toml");
        std::fs::write(
            &toml,
            format!(
                "[telegram]\nenabled = true\ntoken_file = {:?}\nallowed_users = [42]\n",
                file.display().to_string()
            ),
        )
        .unwrap();
        let config = crate::config::load(Some(&toml), Some(Default::default())).unwrap();
        assert!(config.telegram.token_env.is_some());
        let settings = Telegram::new(&config).settings().unwrap();
        assert_eq!(settings.token, "123:from-the-file");
    }

    #[test]
    fn approvers_are_the_listed_users_by_default() {
        let mut config = Config::default();
        config.telegram.allowed_users = vec![42];
        config.telegram.allowed_chats = vec![-100];
        let telegram = Telegram::new(&config);
        let only = |users: &[&str]| Roster::Listed {
            users: users.iter().map(|u| u.to_string()).collect(),
            chats: Vec::new(),
        };
        assert_eq!(telegram.deciders(), only(&["42"]), "not the chats");
        config.telegram.approvers = Some(vec![7]);
        assert_eq!(Telegram::new(&config).deciders(), only(&["7"]));
    }
}
