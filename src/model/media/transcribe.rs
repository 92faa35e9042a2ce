//! The speech-to-text client: POSTs a voice note to
//! `{base_url}/audio/transcriptions` as OpenAI defined it (multipart: `file`,
//! `model`, `response_format`, optionally `language`), which whisper.cpp's
//! server, faster-whisper servers, OpenAI and Groq all speak, and reads the
//! text with — in `verbose_json` — the segments' confidence. The key goes in
//! a header marked sensitive and is never logged; failures are typed by
//! what happened (unreachable, timed out, refused with a status), not by text.

use std::fmt;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::multipart::{Form, Part};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use thiserror::Error;

use crate::config::{ResponseFormat, Secret, TranscriptionConfig};

/// Largest answer read; a transcript of the longest voice note is far smaller.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A transcript at most this many words long is shown back to the person:
/// short utterances are the ones most often misheard, and cheap to echo.
const SHORT_WORDS: usize = 4;

/// Whisper's own threshold: a decode whose mean log-probability is below
/// it counts as failed. Below it, the reply shows what was heard.
const UNSURE_LOGPROB: f64 = -1.0;

/// Why a voice note was not transcribed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TranscribeError {
    /// The settings cannot work (a bad URL, a key that is not a header value).
    #[error("it is not set up right: {reason}")]
    Config { reason: String },
    /// The server could not be reached.
    #[error("it could not be reached ({reason})")]
    Unreachable { reason: String },
    /// The server took longer than `transcription.timeout_s`.
    #[error("it did not answer in time")]
    Timeout,
    /// The server answered with an error status.
    #[error("it answered {status}{}", message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    Refused { status: u16, message: Option<String> },
    /// The answer was not a transcription.
    #[error("its answer was not a transcription ({reason})")]
    Malformed { reason: String },
}

/// What was heard.
#[derive(Clone, Debug, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// The language the server detected or was told, if it said.
    pub language: Option<String>,
    /// The mean of the segments' mean log-probabilities, when given.
    pub avg_logprob: Option<f64>,
}

impl Transcript {
    /// Whether the reply should show what was heard: a short transcript,
    /// or one the model was unsure of.
    pub fn worth_showing(&self) -> bool {
        self.text.split_whitespace().count() <= SHORT_WORDS
            || self.avg_logprob.is_some_and(|logprob| logprob < UNSURE_LOGPROB)
    }
}

/// A client for one transcription server.
#[derive(Clone)]
pub struct Transcriber {
    http: reqwest::Client,
    url: Url,
    base_url: String,
    model: String,
    language: Option<String>,
    format: ResponseFormat,
    /// `Bearer …`, marked sensitive.
    auth: Option<HeaderValue>,
}

impl fmt::Debug for Transcriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transcriber")
            .field("url", &self.url.as_str())
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Transcriber {
    /// The client `section` describes, with `key` if the server wants one;
    /// none when no `base_url` is set.
    pub fn new(section: &TranscriptionConfig, key: Option<Secret>) -> Result<Option<Self>, TranscribeError> {
        let Some(base_url) = section.base_url.clone() else {
            return Ok(None);
        };
        let config = |reason: String| TranscribeError::Config { reason };
        let url = Url::parse(&format!("{}/audio/transcriptions", base_url.trim_end_matches('/')))
            .map_err(|error| config(format!("base_url {base_url:?}: {error}")))?;
        let auth = match key {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                    .map_err(|_| config("the API key contains characters not allowed in an HTTP header".into()))?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(Duration::from_secs(section.connect_timeout_s))
            .timeout(Duration::from_secs(section.timeout_s))
            .redirect(reqwest::redirect::Policy::none());
        if url.host_str().is_some_and(is_loopback) {
            // A local whisper server is never meant to be reached through a proxy.
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|error| config(format!("cannot build the HTTP client: {error}")))?;
        Ok(Some(Self {
            http,
            url,
            base_url,
            model: section.model.clone(),
            language: section.language.clone(),
            format: section.response_format,
            auth,
        }))
    }

    /// Whether the server answers, and takes the key: `GET {base_url}/models`.
    /// Any answer but a refused key will do, since whisper.cpp's server
    /// has no model list.
    pub async fn probe(&self) -> Result<(), TranscribeError> {
        let mut url = self.url.clone();
        url.set_path(&format!(
            "{}/models",
            url.path().trim_end_matches("/audio/transcriptions")
        ));
        let mut request = self.http.get(url);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            let body = read_capped(response).await.unwrap_or_default();
            return Err(refused(status, &body));
        }
        Ok(())
    }

    /// The model asked.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The server's base URL, for messages to the person.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Transcribes `audio`, sent as `file_name` of type `mime`.
    pub async fn transcribe(
        &self,
        audio: Vec<u8>,
        file_name: String,
        mime: &str,
    ) -> Result<Transcript, TranscribeError> {
        let started = std::time::Instant::now();
        // The declared type is the platform's word; one that does not parse is left out.
        let declared = Part::bytes(Vec::new()).mime_str(mime).is_ok();
        let mime = if declared { mime } else { "application/octet-stream" };
        let file = Part::bytes(audio)
            .file_name(file_name)
            .mime_str(mime)
            .map_err(|error| TranscribeError::Config {
                reason: error.to_string(),
            })?;
        let mut form = Form::new()
            .part("file", file)
            .text("model", self.model.clone())
            .text("response_format", self.format.as_str());
        if let Some(language) = &self.language {
            form = form.text("language", language.clone());
        }
        let mut request = self.http.post(self.url.clone()).multipart(form);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let result = async {
            let response = request.send().await.map_err(transport)?;
            let status = response.status();
            let body = read_capped(response).await?;
            if !status.is_success() {
                return Err(refused(status, &body));
            }
            parse(&body)
        }
        .await;
        match &result {
            Ok(transcript) => tracing::info!(
                model = %self.model,
                elapsed_ms = started.elapsed().as_millis() as u64,
                words = transcript.text.split_whitespace().count(),
                "voice note transcribed"
            ),
            Err(error) => {
                tracing::warn!(model = %self.model, endpoint = %self.base_url, %error, "transcription failed")
            }
        }
        result
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A transport failure by its kind: a deadline, or no connection.
fn transport(error: reqwest::Error) -> TranscribeError {
    if error.is_timeout() {
        return TranscribeError::Timeout;
    }
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        reason = cause.to_string();
        source = cause.source();
    }
    TranscribeError::Unreachable { reason }
}

async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, TranscribeError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(TranscribeError::Malformed {
                reason: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error status, with the server's own explanation when it gave one
/// (OpenAI's `{"error":{"message"}}`, a FastAPI `{"detail"}`, plain text).
fn refused(status: StatusCode, body: &[u8]) -> TranscribeError {
    let message = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => [
            &json["error"]["message"],
            &json["error"],
            &json["detail"],
            &json["message"],
        ]
        .into_iter()
        .find_map(|value| value.as_str().map(str::to_owned)),
        Err(_) => std::str::from_utf8(body).ok().map(str::to_owned),
    };
    let message = message
        .map(|text| text.trim().chars().take(200).collect::<String>())
        .filter(|text| !text.is_empty());
    TranscribeError::Refused {
        status: status.as_u16(),
        message,
    }
}

#[derive(Deserialize)]
struct WireTranscription {
    text: String,
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    segments: Option<Vec<WireSegment>>,
}

#[derive(Deserialize)]
struct WireSegment {
    #[serde(default)]
    avg_logprob: Option<f64>,
}

fn parse(body: &[u8]) -> Result<Transcript, TranscribeError> {
    let wire: WireTranscription = serde_json::from_slice(body).map_err(|error| TranscribeError::Malformed {
        reason: error.to_string(),
    })?;
    let logprobs: Vec<f64> = wire
        .segments
        .unwrap_or_default()
        .iter()
        .filter_map(|segment| segment.avg_logprob)
        .collect();
    let avg_logprob = (!logprobs.is_empty()).then(|| logprobs.iter().sum::<f64>() / logprobs.len() as f64);
    Ok(Transcript {
        text: wire.text.trim().to_owned(),
        language: wire.language.filter(|language| !language.is_empty()),
        avg_logprob,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(text: &str, avg_logprob: Option<f64>) -> Transcript {
        Transcript {
            text: text.into(),
            language: None,
            avg_logprob,
        }
    }

    #[test]
    fn short_or_unsure_transcripts_are_shown_back() {
        assert!(transcript("call mum", None).worth_showing());
        assert!(transcript("please remind me about the dentist tomorrow", Some(-1.4)).worth_showing());
        assert!(!transcript("please remind me about the dentist tomorrow", Some(-0.2)).worth_showing());
        assert!(!transcript("please remind me about the dentist tomorrow", None).worth_showing());
    }

    #[test]
    fn verbose_and_plain_answers_are_read() {
        let verbose = br#"{"task":"transcribe","language":"english","duration":2.5,"text":" Hello there. ",
            "segments":[{"id":0,"avg_logprob":-0.5,"no_speech_prob":0.01},{"id":1,"avg_logprob":-1.5}]}"#;
        assert_eq!(
            parse(verbose).unwrap(),
            Transcript {
                text: "Hello there.".into(),
                language: Some("english".into()),
                avg_logprob: Some(-1.0),
            }
        );
        assert_eq!(parse(br#"{"text":"hi"}"#).unwrap(), transcript("hi", None));
        assert!(matches!(parse(b"<html>"), Err(TranscribeError::Malformed { .. })));
    }

    #[test]
    fn a_refusal_carries_the_servers_explanation() {
        let openai = br#"{"error":{"message":"Invalid file format.","type":"invalid_request_error"}}"#;
        assert_eq!(
            refused(StatusCode::BAD_REQUEST, openai).to_string(),
            "it answered 400: Invalid file format."
        );
        assert_eq!(refused(StatusCode::BAD_GATEWAY, b"").to_string(), "it answered 502");
    }

    #[test]
    fn no_base_url_means_no_transcriber_and_the_key_is_never_shown() {
        assert!(
            Transcriber::new(&TranscriptionConfig::default(), None)
                .unwrap()
                .is_none()
        );
        let section = TranscriptionConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..TranscriptionConfig::default()
        };
        let client = Transcriber::new(&section, Some(Secret::new("sk-very-secret")))
            .unwrap()
            .unwrap();
        assert_eq!(client.url.as_str(), "http://127.0.0.1:9/v1/audio/transcriptions");
        assert!(!format!("{client:?}").contains("sk-very-secret"));
    }
}
