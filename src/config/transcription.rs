//! `[transcription]`: the speech-to-text server voice notes are sent to — any
//! that speaks OpenAI's `/v1/audio/transcriptions` (whisper.cpp's server,
//! faster-whisper servers, OpenAI, Groq) — and how long or large a voice
//! note it takes. With no `base_url`, voice notes are answered with how to
//! set one.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_TRANSCRIPTION_MODEL: &str = "whisper-1";
pub const DEFAULT_MAX_SECONDS: u32 = 600;
/// Below the 25 MB that OpenAI and Groq accept in one upload.
pub const DEFAULT_TRANSCRIPTION_MAX_BYTES: u64 = 20 * 1024 * 1024;
pub const DEFAULT_TRANSCRIPTION_TIMEOUT_S: u64 = 120;
pub const DEFAULT_TRANSCRIPTION_CONNECT_TIMEOUT_S: u64 = 5;

/// How the server is asked to answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// The text with its language and segments (each with how sure the
    /// model was): lets a reply show what was heard when it was unsure.
    #[default]
    VerboseJson,
    /// The text alone, for models that answer nothing else
    /// (`gpt-4o-transcribe`).
    Json,
}

impl ResponseFormat {
    /// The value of the request's `response_format` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerboseJson => "verbose_json",
            Self::Json => "json",
        }
    }
}

/// `[transcription]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// The API's base URL, up to and including `/v1`; none: voice notes are
    /// not transcribed (and the person is told how to turn it on).
    pub base_url: Option<String>,
    /// The speech model to ask, e.g. `whisper-1`, `whisper-large-v3`.
    pub model: String,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// A file holding the API key (e.g. a systemd credential).
    pub api_key_file: Option<PathBuf>,
    /// The spoken language (ISO 639-1, e.g. `en`), if always the same;
    /// none lets the server detect it.
    pub language: Option<String>,
    pub response_format: ResponseFormat,
    /// Longest voice note or audio file taken, by its declared length, in seconds.
    pub max_seconds: u32,
    /// Largest voice note or audio file fetched and sent, in bytes.
    pub max_bytes: u64,
    /// Whole request, in seconds.
    pub timeout_s: u64,
    /// Establishing the connection, in seconds.
    pub connect_timeout_s: u64,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            model: DEFAULT_TRANSCRIPTION_MODEL.to_owned(),
            api_key_env: None,
            api_key_file: None,
            language: None,
            response_format: ResponseFormat::default(),
            max_seconds: DEFAULT_MAX_SECONDS,
            max_bytes: DEFAULT_TRANSCRIPTION_MAX_BYTES,
            timeout_s: DEFAULT_TRANSCRIPTION_TIMEOUT_S,
            connect_timeout_s: DEFAULT_TRANSCRIPTION_CONNECT_TIMEOUT_S,
        }
    }
}

impl TranscriptionConfig {
    /// Notes what is wrong with `[transcription]`; a transcription runs
    /// within a turn, so one that is set up must end before `turn_timeout_s`.
    pub fn check(&self, problems: &mut Problems, turn_timeout_s: u64) {
        if let Some(base_url) = &self.base_url {
            problems.check(
                matches!(reqwest::Url::parse(base_url), Ok(url) if matches!(url.scheme(), "http" | "https")),
                format!("transcription.base_url {base_url:?} is not an http(s) URL"),
            );
        }
        problems.check(!self.model.trim().is_empty(), "transcription.model must not be empty");
        problems.check(
            !(self.api_key_env.is_some() && self.api_key_file.is_some()),
            "transcription: set api_key_env or api_key_file, not both",
        );
        if let Some(path) = &self.api_key_file
            && let Err(problem) = super::file_access::find_file(path)
        {
            problems.push(format!("transcription.api_key_file {} {problem}", path.display()));
        }
        if let Some(language) = &self.language {
            problems.check(
                language.len() == 2 && language.chars().all(|c| c.is_ascii_lowercase()),
                format!("transcription.language {language:?} is not a two-letter ISO 639-1 code such as \"en\""),
            );
        }
        problems.check(self.max_seconds > 0, "transcription.max_seconds must be at least 1");
        problems.check(self.max_bytes > 0, "transcription.max_bytes must be at least 1");
        problems.check(self.timeout_s > 0, "transcription.timeout_s must be at least 1");
        problems.check(
            self.base_url.is_none() || self.timeout_s < turn_timeout_s,
            format!(
                "transcription.timeout_s ({} s) must be shorter than pipeline.turn_timeout_s ({turn_timeout_s} s), \
                 or a slow transcription ends the whole turn",
                self.timeout_s
            ),
        );
        problems.check(
            self.connect_timeout_s > 0,
            "transcription.connect_timeout_s must be at least 1",
        );
    }
}
