//! Connecting a Telegram bot from the Channels page: the token checked
//! with `getMe` as `setup` checks it, and stored as `setup` stores it (in
//! the file `telegram.token_file` names, or `telegram.token` beside the
//! configuration, mode 0600), with `[telegram]` turned on and pointed at
//! it.

use std::sync::Arc;

use toml_edit::{DocumentMut, value};

use super::super::AdminContext;
use super::super::config_write::{self, Change, ChangeError, Outcome};
use super::beside;
use super::kept::{self, SecretFile};
use crate::config::Secret;

/// Connects the bot whose token is `token`, letting in `owner` if given.
pub(in crate::daemon::admin) async fn connect_telegram(
    admin: &Arc<AdminContext>,
    token: String,
    owner: Option<i64>,
) -> Outcome {
    let token = token.trim().to_owned();
    if token.is_empty() || token.chars().any(char::is_whitespace) || token.len() > 256 {
        return Outcome::refused("that is not a bot token: paste the token @BotFather gave, as one word");
    }
    if owner.is_some_and(|owner| owner <= 0) {
        return Outcome::refused("a Telegram user id is a positive number");
    }
    let (file, config) = match kept::current(admin).await {
        Ok(current) => current,
        Err(refused) => return refused,
    };
    let secret = Secret::new(token.clone());
    let bot = match crate::gateways::telegram::check::bot(&config.telegram.api_url, &secret).await {
        Ok(bot) => bot,
        Err(why) => {
            return Outcome::refused(format!(
                "Telegram did not take the token (getMe): {}; nothing was written",
                (admin.redact)(&why).replace(&token, crate::config::masked::MASK)
            ));
        }
    };
    let token_file = config
        .telegram
        .token_file
        .clone()
        .unwrap_or_else(|| beside(&file, "telegram.token"));
    let change = TelegramToken {
        file: SecretFile::new(secret, token_file),
        owner,
    };
    let mut outcome = config_write::apply(admin, None, change).await;
    if outcome.written {
        outcome.message = format!("The bot {bot} answers. {}", outcome.message);
    }
    outcome
}

/// The Telegram token stored in its file, and `[telegram]` turned on and
/// pointed at it.
struct TelegramToken {
    file: SecretFile,
    owner: Option<i64>,
}

impl Change for TelegramToken {
    fn text(&mut self, current: &str) -> Result<String, ChangeError> {
        let mut document: DocumentMut = current.parse().map_err(|_| ChangeError::NotToml)?;
        let telegram = kept::table(&mut document, "telegram")?;
        telegram.insert("enabled", value(true));
        telegram.remove("token_env");
        telegram.insert("token_file", value(self.file.path.display().to_string()));
        if let Some(owner) = self.owner {
            kept::add_to_list(telegram, ("allowed_users", "telegram.allowed_users"), owner, |user| {
                user.as_integer() == Some(owner)
            })?;
        }
        Ok(document.to_string())
    }

    fn prepare(&mut self) -> Result<Option<String>, ChangeError> {
        Ok(self.file.write()?.then(|| {
            format!(
                "Stored the new token in {} (mode 0600); a bot already running takes it when the daemon restarts",
                self.file.path.display()
            )
        }))
    }

    fn undo(&mut self) {
        self.file.undo();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_in_its_file_and_telegram_points_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telegram.token");
        let mut change = TelegramToken {
            file: SecretFile::new(Secret::new("123:abc".to_owned()), file.clone()),
            owner: Some(42),
        };
        let text = change
            .text("# mine\n[telegram]\ntoken_env = \"T\"\nallowed_users = [7]\n")
            .unwrap();
        assert!(text.starts_with("# mine\n[telegram]\n"), "{text}");
        assert!(text.contains("enabled = true") && !text.contains("token_env"), "{text}");
        assert!(text.contains("allowed_users = [7, 42]"), "{text}");
        assert!(text.contains(&format!("token_file = \"{}\"", file.display())), "{text}");
        change.prepare().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (std::fs::read_to_string(&file).unwrap().as_str(), mode),
            ("123:abc\n", 0o600)
        );
        change.undo();
        assert!(!file.exists(), "a refused change takes its new file back");
    }

    #[test]
    fn a_new_token_for_a_bot_already_set_up_is_stored_though_the_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telegram.token");
        std::fs::write(&file, "123:old\n").unwrap();
        let current = format!(
            "[telegram]\nenabled = true\ntoken_file = \"{}\"\nallowed_users = [42]\n",
            file.display()
        );
        let mut change = TelegramToken {
            file: SecretFile::new(Secret::new("123:new".to_owned()), file.clone()),
            owner: Some(42),
        };
        assert_eq!(change.text(&current).unwrap(), current);
        let stored = change.prepare().unwrap().expect("the new token is a change");
        assert!(stored.contains("restarts") && !stored.contains("123:new"), "{stored}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "123:new\n");
        change.undo();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "123:old\n", "put back");
        let mut same = TelegramToken {
            file: SecretFile::new(Secret::new("123:old".to_owned()), file.clone()),
            owner: None,
        };
        assert_eq!(same.prepare().unwrap(), None, "the same token changes nothing");
    }
}
