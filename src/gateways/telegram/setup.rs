//! The Telegram step: the bot's token (never shown), checked with `getMe`,
//! then its owner: the person who sends the bot its first message (or the
//! id `--owner` gives), who may talk to it and approve its actions.

use std::time::Duration;

use async_trait::async_trait;
use clap::Args;
use passepartout_telegram::config::{DEFAULT_TELEGRAM_API_URL, DEFAULT_TELEGRAM_TOKEN_ENV};
use passepartout_telegram::{ContactError, first_contact};

use super::check;
use super::section::{self, TelegramSection};
use crate::config::Secret;
use crate::config::interview::{
    AfterFailure, Context, Only, Part, Place, Question, SecretFile, SecretRef, SecretsMode, SetupError, Step,
};

/// What the owner is told in the chat once they are taken. It goes out as
/// plain text, before the daemon (and its renderer) runs: no markup, and no
/// command for a shell, which a chat is not.
const GREETING: &str = "Hello! You are now the owner of this assistant: it takes your messages and asks you \
                        before it acts. Finish the setup on your computer; once the assistant runs, it answers \
                        you here.";

/// How long setup waits, by default, for someone to write to the bot.
pub const DEFAULT_CAPTURE_TIMEOUT_S: u64 = 300;

/// The Telegram step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct TelegramFlags {
    /// Set up no Telegram bot.
    #[arg(long, conflicts_with_all = ["telegram_token_env", "telegram_token_stdin", "owner"])]
    pub no_telegram: bool,
    /// Read the Telegram bot token from the environment variable VAR.
    #[arg(id = "telegram_token_env", long = "telegram-token-env", value_name = "VAR")]
    pub token_env: Option<String>,
    /// Read the Telegram bot token from the next line of standard input
    /// (after the model's key, when --model-key-stdin reads that too).
    #[arg(
        id = "telegram_token_stdin",
        long = "telegram-token-stdin",
        conflicts_with = "telegram_token_env"
    )]
    pub token_stdin: bool,
    /// The Bot API server.
    #[arg(id = "telegram_api_url", long = "telegram-api-url", value_name = "URL", default_value = DEFAULT_TELEGRAM_API_URL)]
    pub api_url: String,
    /// The owner's Telegram user id; without it, the first person to write to
    /// the bot becomes the owner.
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub owner: Option<i64>,
    /// How long to wait for that first message, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_CAPTURE_TIMEOUT_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub capture_timeout_s: u64,
}

/// `[telegram]`, from its flags' answers or the person's.
pub struct TelegramStep {
    pub flags: TelegramFlags,
}

impl TelegramStep {
    async fn token(&self, cx: &mut Context<'_>) -> Result<Secret, SetupError> {
        if let Some(name) = &self.flags.token_env {
            return cx.input.env_secret(name, "--telegram-token-env");
        }
        if self.flags.token_stdin {
            return cx.input.stdin_secret("--telegram-token-stdin").await;
        }
        if !cx.input.interactive() {
            return Err(SetupError::Missing {
                flag: "--telegram-token-env VAR (or --no-telegram)",
                what: "the Telegram bot token".into(),
            });
        }
        cx.input
            .say("Create a bot with @BotFather in Telegram (/newbot); it gives you the bot's token.");
        let token = cx.input.typed_secret("The bot's token (not shown): ", false).await?;
        Ok(token.expect("a required secret is never empty"))
    }

    /// The token, checked unless checks are skipped; the bot's `@username` if known.
    async fn checked_token(&self, cx: &mut Context<'_>) -> Result<(Secret, Option<String>), SetupError> {
        let mut token = self.token(cx).await?;
        if cx.skip_checks {
            return Ok((token, None));
        }
        loop {
            match check::bot(&self.flags.api_url, &token).await {
                Ok(bot) => {
                    cx.input.say(&format!("The bot answers: {bot}"));
                    return Ok((token, Some(bot)));
                }
                Err(error) => {
                    cx.input.say(&format!("The bot does not answer: {error}"));
                    match cx.input.after_failure().await? {
                        None => {
                            return Err(SetupError::CheckFailed {
                                check: format!("telegram: {error}"),
                                hint: "check the token with @BotFather, and --telegram-api-url",
                            });
                        }
                        Some(AfterFailure::Retry) => continue,
                        Some(AfterFailure::Change) => token = self.token(cx).await?,
                        Some(AfterFailure::Keep) => return Ok((token, None)),
                    }
                }
            }
        }
    }

    /// The owner: `--owner`, else the first person to write to the bot.
    async fn owner(&self, cx: &mut Context<'_>, token: &Secret, bot: Option<&str>) -> Result<i64, SetupError> {
        if let Some(owner) = self.flags.owner {
            return Ok(owner);
        }
        let within = Duration::from_secs(self.flags.capture_timeout_s);
        loop {
            cx.input.say(&format!(
                "Now send /start to {} in Telegram, from your own account: that makes you its owner \
                 (waiting up to {} s).",
                bot.unwrap_or("your bot"),
                within.as_secs()
            ));
            let settings = check::bot_settings(&self.flags.api_url, token);
            let failure = match first_contact(&settings, within, GREETING).await {
                Ok(contact) => {
                    cx.input.say(&format!(
                        "Got it: {} (user id {}) is the owner.{}",
                        contact.name,
                        contact.user_id,
                        if contact.answered {
                            ""
                        } else {
                            " (The answer in the chat could not be sent.)"
                        }
                    ));
                    return Ok(contact.user_id);
                }
                Err(error) => error,
            };
            cx.input.say(&format!("No owner yet: {failure}"));
            if !cx.input.interactive() {
                return Err(SetupError::NoOwner {
                    reason: failure.to_string(),
                    how: "the owner's Telegram user id with --owner ID",
                });
            }
            if matches!(failure, ContactError::Timeout(_)) && cx.input.yes("Wait again?", true).await? {
                continue;
            }
            let question = Question {
                prompt: "Then type your Telegram user id (a number)",
                flag: "--owner",
                default: None,
            };
            loop {
                match cx.input.text(question, None).await?.parse::<i64>() {
                    Ok(id) if id > 0 => return Ok(id),
                    _ => cx.input.say("A user id is a positive number."),
                }
            }
        }
    }
}

#[async_trait(?Send)]
impl Step for TelegramStep {
    fn only(&self) -> Only {
        Only {
            name: "telegram",
            about: "The Telegram bot (`[telegram]`)",
            place: Place::Table("telegram"),
        }
    }

    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError> {
        let wanted = !self.flags.no_telegram
            && (self.flags.token_env.is_some()
                || self.flags.token_stdin
                // `--only telegram` asked for it already.
                || cx.only.is_some()
                || !cx.input.interactive()
                || cx.input.yes("Set up a Telegram bot?", true).await?);
        if !wanted {
            return Ok(Part::default());
        }
        let (token, bot) = self.checked_token(cx).await?;
        let owner = self.owner(cx, &token, bot.as_deref()).await?;
        let mut part = Part::default();
        let token = match cx.secrets {
            SecretsMode::File => {
                let path = cx.beside_config("telegram.token");
                part.secrets.push(SecretFile {
                    path: path.clone(),
                    secret: token,
                });
                SecretRef::File(path)
            }
            SecretsMode::Env => {
                let variable = (self.flags.token_env.clone()).unwrap_or_else(|| DEFAULT_TELEGRAM_TOKEN_ENV.to_owned());
                part.variables.push(variable.clone());
                SecretRef::Env(variable)
            }
        };
        part.section = section::render(&TelegramSection {
            api_url: self.flags.api_url.trim_end_matches('/').to_owned(),
            token,
            owner,
        });
        Ok(part)
    }
}

#[cfg(test)]
mod tests {
    use super::GREETING;

    #[test]
    fn the_greeting_reads_as_plain_text_in_a_chat() {
        for markup in ["`", "**", "__", "["] {
            assert!(!GREETING.contains(markup), "{markup} in {GREETING}");
        }
        assert!(
            !GREETING.contains("passepartout "),
            "no shell command in a chat: {GREETING}"
        );
    }
}
