//! The `[telegram]` section as the wizard writes it: the bot's token (its
//! file or variable, never the token), the Bot API server, and the owner,
//! who may talk and approve.

use crate::config::interview::SecretRef;
use crate::config::interview::render::{path, quoted};

/// The `[telegram]` section's answers.
#[derive(Clone, Debug, PartialEq)]
pub struct TelegramSection {
    pub api_url: String,
    /// A file or an environment variable; never [`SecretRef::None`].
    pub token: SecretRef,
    /// The owner's user id: allowed to talk, and the approver.
    pub owner: i64,
}

/// The Telegram bot's section.
pub fn render(section: &TelegramSection) -> String {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::interview::render::{assert_commented, document, loaded};

    #[test]
    fn the_telegram_section_round_trips_with_the_owner_as_approver() {
        let section = TelegramSection {
            api_url: "http://127.0.0.1:8081".into(),
            token: SecretRef::File("/etc/passepartout/telegram.token".into()),
            owner: 123_456_789,
        };
        let text = document(&[render(&section)]);
        assert_commented(&text);
        let config = loaded(&text);
        assert!(config.telegram.enabled);
        assert_eq!(config.telegram.allowed_users, vec![123_456_789]);
        assert_eq!(config.telegram.approver_ids(), &[123_456_789]);
        assert_eq!(config.telegram.api_url, "http://127.0.0.1:8081");
        assert_eq!(
            config.telegram.token_file.as_deref(),
            Some(Path::new("/etc/passepartout/telegram.token"))
        );
        let text = document(&[render(&TelegramSection {
            token: SecretRef::Env("MY_BOT_TOKEN".into()),
            ..section
        })]);
        assert_commented(&text);
        let by_env = loaded(&text);
        assert_eq!(by_env.telegram.token_env.as_deref(), Some("MY_BOT_TOKEN"));
        assert_eq!(by_env.telegram.token_file, None);
    }
}
