//! Where the answers come from: the terminal (asked, with the flags'
//! answers taken as given), or, with `--non-interactive`, the flags and the
//! environment alone. Secrets come from the terminal with echo off, from an
//! environment variable a flag names, or from a line of standard input;
//! never from a flag's own value.

use std::io::BufRead;

use super::error::SetupError;
use super::terminal::Terminal;
use crate::config::Secret;

/// A question with a flag that answers it.
#[derive(Clone, Copy)]
pub struct Question<'a> {
    /// What is asked, without the default.
    pub prompt: &'a str,
    /// The flag that answers it, named when it is missing.
    pub flag: &'static str,
    /// The answer when none is typed (or given, non-interactively).
    pub default: Option<&'a str>,
}

/// What the user chose after a failed check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Check the same answers again.
    Retry,
    /// Give other answers.
    Change,
    /// Keep the answers as they are.
    Keep,
}

/// The source of the answers.
pub struct Input {
    terminal: Option<Terminal>,
    /// Standard input's lines, for secrets read from it in a script.
    stdin_lines: Option<std::io::Lines<std::io::StdinLock<'static>>>,
}

impl Input {
    /// Asking on `terminal`; without one, answers come from flags alone.
    pub fn new(terminal: Option<Terminal>) -> Self {
        Self {
            terminal,
            stdin_lines: None,
        }
    }

    pub fn interactive(&self) -> bool {
        self.terminal.is_some()
    }

    /// A line for the person at the terminal (in a script too: it says
    /// what was done).
    pub fn say(&self, text: &str) {
        println!("{text}");
    }

    /// The answer to `question`: `given` if a flag gave it, else typed (the
    /// default on an empty line), else the default; else an error naming the flag.
    pub async fn text(&mut self, question: Question<'_>, given: Option<&str>) -> Result<String, SetupError> {
        if let Some(given) = given {
            return Ok(given.to_owned());
        }
        let Some(terminal) = &self.terminal else {
            return question.default.map(str::to_owned).ok_or(SetupError::Missing {
                flag: question.flag,
                what: question.prompt.to_owned(),
            });
        };
        loop {
            let prompt = match question.default {
                Some(default) => format!("{} [{default}]: ", question.prompt),
                None => format!("{}: ", question.prompt),
            };
            let line = terminal.line(&prompt).await.map_err(SetupError::Terminal)?;
            let line = line.ok_or(SetupError::InputClosed)?;
            match (line.trim(), question.default) {
                ("", Some(default)) => return Ok(default.to_owned()),
                ("", None) => continue,
                (typed, _) => return Ok(typed.to_owned()),
            }
        }
    }

    /// A yes-or-no question; non-interactively, `default`.
    pub async fn yes(&mut self, prompt: &str, default: bool) -> Result<bool, SetupError> {
        let Some(terminal) = &self.terminal else {
            return Ok(default);
        };
        let hint = if default { "[Y/n]" } else { "[y/N]" };
        loop {
            let line = terminal
                .line(&format!("{prompt} {hint} "))
                .await
                .map_err(SetupError::Terminal)?;
            match line
                .ok_or(SetupError::InputClosed)?
                .trim()
                .to_ascii_lowercase()
                .as_str()
            {
                "" => return Ok(default),
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => continue,
            }
        }
    }

    /// A secret typed with echo off; `None` when the line is left empty
    /// and `optional`.
    pub async fn typed_secret(&mut self, prompt: &str, optional: bool) -> Result<Option<Secret>, SetupError> {
        let Some(terminal) = &self.terminal else {
            return Ok(None);
        };
        loop {
            let line = terminal.secret(prompt).await.map_err(SetupError::Terminal)?;
            let line = line.ok_or(SetupError::InputClosed)?;
            match line.trim() {
                "" if optional => return Ok(None),
                "" => continue,
                value => return Ok(Some(Secret::new(value))),
            }
        }
    }

    /// The secret in environment variable `name`.
    pub fn env_secret(&self, name: &str, flag: &'static str) -> Result<Secret, SetupError> {
        Secret::from_env(name, |n| std::env::var(n).ok()).map_err(|_| SetupError::EnvMissing {
            name: name.to_owned(),
            flag,
        })
    }

    /// The next line of standard input, as a secret. On a terminal it is
    /// typed with echo off, like any secret asked there.
    pub async fn stdin_secret(&mut self, flag: &'static str) -> Result<Secret, SetupError> {
        if self.terminal.is_some() {
            let typed = self
                .typed_secret(&format!("The secret for {flag} (not shown): "), false)
                .await?;
            return typed.ok_or(SetupError::StdinEmpty { flag });
        }
        let lines = self.stdin_lines.get_or_insert_with(|| std::io::stdin().lock().lines());
        match lines.next() {
            Some(Ok(line)) if !line.trim().is_empty() => Ok(Secret::new(line.trim())),
            Some(Err(error)) => Err(SetupError::Terminal(error)),
            _ => Err(SetupError::StdinEmpty { flag }),
        }
    }

    /// After a failed check: interactively, what the user wants; in a
    /// script, nothing to choose.
    pub async fn after_failure(&mut self) -> Result<Option<AfterFailure>, SetupError> {
        let Some(terminal) = &self.terminal else {
            return Ok(None);
        };
        loop {
            let prompt = "Try again (t), change the answers (c), or keep them anyway (k)? [t] ";
            let line = terminal.line(prompt).await.map_err(SetupError::Terminal)?;
            match line
                .ok_or(SetupError::InputClosed)?
                .trim()
                .to_ascii_lowercase()
                .as_str()
            {
                "" | "t" => return Ok(Some(AfterFailure::Retry)),
                "c" => return Ok(Some(AfterFailure::Change)),
                "k" => return Ok(Some(AfterFailure::Keep)),
                _ => continue,
            }
        }
    }
}
