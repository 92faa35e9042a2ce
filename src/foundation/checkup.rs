//! One line of `passepartout doctor`: a part, how it is doing, and what to do
//! about it. Its own module so that every part — the doctor's own checks and
//! each gateway's — can say how it is doing without depending on the doctor.

use std::fmt;

/// How a part is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    Degraded,
    Failed,
}

/// One doctor line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub part: String,
    pub level: Level,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    pub fn new(part: impl Into<String>, level: Level, detail: impl Into<String>, fix: Option<String>) -> Self {
        Self {
            part: part.into(),
            level,
            detail: detail.into(),
            fix,
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Ok => "ok",
            Level::Degraded => "degraded",
            Level::Failed => "failed",
        };
        write!(f, "{level:<9}{:<16}{}", self.part, self.detail)?;
        if let Some(fix) = &self.fix {
            write!(f, " — {fix}")?;
        }
        Ok(())
    }
}
