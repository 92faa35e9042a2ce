//! The Matrix step: the homeserver, the account made for the assistant and
//! its password (never shown), and the owner's own user id. Setup logs in
//! once, as a new device, and stores that device's access token (a file of
//! mode 0600, or a variable) instead of the password; the daemon makes the
//! device's encryption keys when it first starts. With checks skipped, or
//! a login kept though it failed, the password is stored instead, and the
//! daemon logs in with it once.

use async_trait::async_trait;
use clap::Args;
use passepartout_matrix::client::session;
use passepartout_matrix::config::{DEFAULT_DEVICE_NAME, DEFAULT_PASSWORD_ENV, is_user_id};

use super::section::{self, MatrixAnswers, Proof};
use crate::config::Secret;
use crate::config::interview::{
    AfterFailure, Context, Only, Part, Place, Question, SecretFile, SecretRef, SecretsMode, SetupError, Step,
};

/// The variable the access token is read from when secrets are left to
/// the environment.
const TOKEN_ENV: &str = "MATRIX_ACCESS_TOKEN";

/// The Matrix step's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct MatrixFlags {
    /// Set up a Matrix account for the assistant. Interactively, setup asks.
    #[arg(id = "matrix", long = "matrix")]
    pub wanted: bool,
    /// The Matrix homeserver's address (https://matrix.example.org).
    #[arg(id = "matrix_homeserver", long = "matrix-homeserver", value_name = "URL")]
    pub homeserver: Option<String>,
    /// The assistant's own Matrix user id (@name:server): an account made
    /// for it, not yours.
    #[arg(id = "matrix_user", long = "matrix-user", value_name = "USER")]
    pub user: Option<String>,
    /// Read that account's password from the environment variable VAR.
    #[arg(id = "matrix_password_env", long = "matrix-password-env", value_name = "VAR")]
    pub password_env: Option<String>,
    /// Read that account's password from the next line of standard input
    /// (after the other secrets read there).
    #[arg(
        id = "matrix_password_stdin",
        long = "matrix-password-stdin",
        conflicts_with = "matrix_password_env"
    )]
    pub password_stdin: bool,
    /// Your own Matrix user id: who may talk to the assistant and approve.
    #[arg(id = "matrix_owner", long = "matrix-owner", value_name = "USER")]
    pub owner: Option<String>,
    /// The name the assistant's device is listed under.
    #[arg(id = "matrix_device", long = "matrix-device", value_name = "NAME", default_value = DEFAULT_DEVICE_NAME)]
    pub device: String,
}

/// `[matrix]`, from its flags' answers or the person's.
pub struct MatrixStep {
    pub flags: MatrixFlags,
}

/// What was asked, before the login.
struct Account {
    homeserver: String,
    user: String,
    password: Secret,
}

#[async_trait(?Send)]
impl Step for MatrixStep {
    fn only(&self) -> Only {
        Only {
            name: "matrix",
            about: "The assistant's Matrix account (`[matrix]`)",
            place: Place::Table("matrix"),
        }
    }

    async fn run(&self, cx: &mut Context<'_>) -> Result<Part, SetupError> {
        let flags = &self.flags;
        let wanted = flags.wanted
            || flags.homeserver.is_some()
            // `--only matrix` asked for it already.
            || cx.only.is_some()
            || cx.input.yes("Set up a Matrix account for the assistant?", false).await?;
        if !wanted {
            return Ok(Part::default());
        }
        let mut account = self.account(cx, false).await?;
        let owner = user_id(
            cx,
            Question {
                prompt: "Your own Matrix user id (@you:server), who may talk to it and approve",
                flag: "--matrix-owner",
                default: None,
            },
            flags.owner.as_deref(),
        )
        .await?;
        let proof = loop {
            if cx.skip_checks {
                break None;
            }
            match session::log_in(
                &account.homeserver,
                &account.user,
                account.password.expose(),
                &flags.device,
            )
            .await
            {
                Ok((token, device_id)) => {
                    cx.input.say(&format!(
                        "Logged in as {} on a new device, {device_id}; its access token is kept instead of the password.",
                        account.user
                    ));
                    break Some((Secret::new(&token), device_id));
                }
                Err(error) => {
                    cx.input
                        .say(&format!("The homeserver did not log the assistant in: {error}"));
                    match cx.input.after_failure().await? {
                        None => {
                            return Err(SetupError::CheckFailed {
                                check: format!("matrix: {error}"),
                                hint: "check --matrix-homeserver, --matrix-user and the password",
                            });
                        }
                        Some(AfterFailure::Retry) => {}
                        Some(AfterFailure::Change) => account = self.account(cx, true).await?,
                        Some(AfterFailure::Keep) => break None,
                    }
                }
            }
        };
        let mut part = Part::default();
        let proof = match proof {
            Some((token, device_id)) => Proof::Token {
                token: store(cx, &mut part, "matrix.token", TOKEN_ENV, token),
                device_id,
            },
            None => {
                let variable = flags.password_env.as_deref().unwrap_or(DEFAULT_PASSWORD_ENV);
                Proof::Password(store(cx, &mut part, "matrix.password", variable, account.password))
            }
        };
        part.section = section::render(&MatrixAnswers {
            homeserver: account.homeserver,
            user: account.user,
            proof,
            device_name: flags.device.clone(),
            owner,
        });
        Ok(part)
    }
}

impl MatrixStep {
    /// The homeserver, the assistant's user id and its password: from the
    /// flags, or asked (`again`: asked even where a flag answered, after a
    /// failed login).
    async fn account(&self, cx: &mut Context<'_>, again: bool) -> Result<Account, SetupError> {
        let flags = &self.flags;
        let given = |value: &Option<String>| value.clone().filter(|_| !again);
        let homeserver = loop {
            let question = Question {
                prompt: "The homeserver's address (https://…)",
                flag: "--matrix-homeserver",
                default: None,
            };
            let answer = cx.input.text(question, given(&flags.homeserver).as_deref()).await?;
            match reqwest::Url::parse(&answer) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => break answer.trim_end_matches('/').to_owned(),
                _ if cx.input.interactive() => cx.input.say("That is not an http:// or https:// address."),
                _ => {
                    return Err(SetupError::Missing {
                        flag: "--matrix-homeserver URL",
                        what: format!("a homeserver's address, not {answer:?}"),
                    });
                }
            }
        };
        let user = user_id(
            cx,
            Question {
                prompt: "The assistant's own user id (@name:server), an account made for it",
                flag: "--matrix-user",
                default: None,
            },
            given(&flags.user).as_deref(),
        )
        .await?;
        let password = if let (Some(name), false) = (&flags.password_env, again) {
            cx.input.env_secret(name, "--matrix-password-env")?
        } else if flags.password_stdin && !again {
            cx.input.stdin_secret("--matrix-password-stdin").await?
        } else {
            match cx.input.typed_secret("Its password (not shown): ", false).await? {
                Some(password) => password,
                None => {
                    return Err(SetupError::Missing {
                        flag: "--matrix-password-env VAR (or --matrix-password-stdin)",
                        what: "the assistant's Matrix password".into(),
                    });
                }
            }
        };
        Ok(Account {
            homeserver,
            user,
            password,
        })
    }
}

/// A user id, asked again until it is one (in a script, an error naming
/// the flag).
async fn user_id(cx: &mut Context<'_>, question: Question<'_>, given: Option<&str>) -> Result<String, SetupError> {
    loop {
        let answer = cx.input.text(question, given).await?;
        if is_user_id(&answer) {
            return Ok(answer);
        }
        if !cx.input.interactive() || given.is_some() {
            return Err(SetupError::Missing {
                flag: question.flag,
                what: format!("a user id (@name:server), not {answer:?}"),
            });
        }
        cx.input.say("A user id is @name:server.");
    }
}

/// Where `secret` is kept: a file `name` of mode 0600 beside the
/// configuration, or the environment variable `variable` the daemon is
/// started with.
fn store(cx: &Context<'_>, part: &mut Part, name: &str, variable: &str, secret: Secret) -> SecretRef {
    match cx.secrets {
        SecretsMode::File => {
            let path = cx.beside_config(name);
            part.secrets.push(SecretFile {
                path: path.clone(),
                secret,
            });
            SecretRef::File(path)
        }
        SecretsMode::Env => {
            part.variables.push(variable.to_owned());
            SecretRef::Env(variable.to_owned())
        }
    }
}
