//! The bot's check that setup and the dashboard's Channels page run on a
//! token, the same one `doctor` runs: `getMe`, which never shows the
//! token.

use std::time::Duration;

use passepartout_telegram::TelegramSettings;

use crate::config::Secret;

/// How long the bot's check waits, as `doctor`'s does.
const BOT_CHECK_LIMIT: Duration = Duration::from_secs(15);

/// The bot's `@username`, or why Telegram did not say.
pub async fn bot(api_url: &str, token: &Secret) -> Result<String, String> {
    let settings = bot_settings(api_url, token);
    match tokio::time::timeout(BOT_CHECK_LIMIT, passepartout_telegram::check(&settings)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "{} did not answer within {} s",
            settings.api_url,
            BOT_CHECK_LIMIT.as_secs()
        )),
    }
}

/// The gateway's settings for the bot with `token` at `api_url`.
pub fn bot_settings(api_url: &str, token: &Secret) -> TelegramSettings {
    let mut settings = TelegramSettings::new(token.expose());
    settings.api_url = api_url.trim_end_matches('/').to_owned();
    settings
}
