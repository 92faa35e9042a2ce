//! `http_get {url}`: fetch an http(s) URL and return its text to the model.
//!
//! The model picks the URL, so every connection is checked against the
//! [`AddressPolicy`] (see `net_policy`) where it cannot be dodged:
//! - host names are resolved by [`CheckedResolver`], which hands reqwest only
//!   the accepted addresses, so the connection goes to exactly the address
//!   that was checked;
//! - IP literals, which reqwest connects to without resolving, are checked
//!   before the request and, for redirect targets, in the redirect policy;
//! - no proxy is used, since a proxy would connect on our behalf unchecked.
//!
//! A refusal travels through reqwest as a typed error ([`Refusal`],
//! [`NoPublicAddress`]) and is found again by walking the error's sources.
//! A body over `max_bytes` is refused rather than cut, so the model never
//! mistakes part of a document for all of it. What is downloaded is made
//! readable (see `readable`: a page's article as Markdown, JSON
//! pretty-printed, a PDF's text) and shown `page_bytes` at a time: the
//! result says where it was cut and which `start` gives the rest. A non-2xx
//! status is an ordinary result: the status line and a short excerpt of the
//! body.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::dns::Resolve;
use reqwest::header::CONTENT_TYPE;
use reqwest::{Response, Url, redirect};
use serde::Deserialize;
use thiserror::Error;

use super::net_policy::{AddressPolicy, Blocked, CheckedResolver, NoPublicAddress, SystemResolver};
use super::readable::{self, ContentType, Cut, PastEnd, Reading};
use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::config::HttpGetConfig;
use crate::model::llm::ToolSpec;

/// How much longer than the request timeout the tool box waits, so that the
/// request's own, more precise timeout error is the one reported.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(2);

/// Said with every address refusal.
const PUBLIC_ONLY: &str = "http_get only connects to public addresses";

/// Most bytes of an error page shown with a non-2xx status.
const ERROR_EXCERPT_BYTES: usize = 1024;

const USER_AGENT: &str = concat!("passepartout/", env!("CARGO_PKG_VERSION"));

/// What `Accept` says; the same list [`ContentType::kind`] reads.
const ACCEPT: &str = "text/html, text/*, application/json, application/pdf, application/xml, application/javascript, */*+json, */*+xml;q=0.9";

/// The model's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    url: String,
    /// Byte offset into the text read from the document, from a previous
    /// call's note.
    #[serde(default)]
    start: usize,
}

/// The `http_get` tool.
pub struct HttpGet {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    timeout: Duration,
    max_bytes: usize,
    page_bytes: usize,
    max_pdf_pages: usize,
}

/// The HTTP client could not be built (the TLS backend failed to start).
#[derive(Debug, Error)]
#[error("cannot build the http_get client")]
pub struct BuildError(#[source] reqwest::Error);

impl HttpGet {
    /// The tool with `config`'s limits, resolving names with the system
    /// resolver (through tokio) and refusing non-public addresses unless
    /// `allow_private`.
    pub fn new(config: &HttpGetConfig) -> Result<Self, BuildError> {
        Self::with_resolver(config, Arc::new(SystemResolver), &[])
    }

    /// Like [`HttpGet::new`], but names are looked up by `lookup` (whose
    /// answers are still checked), and the names in `exempt_hosts` may
    /// resolve to any address — see [`AddressPolicy::exempt_host`]. For
    /// tests: a fake "public" server on loopback.
    pub fn with_resolver(
        config: &HttpGetConfig,
        lookup: Arc<dyn Resolve>,
        exempt_hosts: &[&str],
    ) -> Result<Self, BuildError> {
        let policy = exempt_hosts
            .iter()
            .fold(AddressPolicy::new(config.allow_private), |policy, host| {
                policy.exempt_host(host)
            });
        let policy = Arc::new(policy);
        let timeout = Duration::from_secs(config.timeout_s);
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver::new(lookup, policy.clone())))
            .redirect(redirect_policy(policy.clone(), config.max_redirects))
            .referer(false)
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(BuildError)?;
        Ok(Self {
            client,
            policy,
            timeout,
            max_bytes: config.max_bytes,
            page_bytes: config.page_bytes,
            max_pdf_pages: config.max_pdf_pages,
        })
    }

    /// The spec of the tool set up from `config`, without setting it up.
    pub fn spec_for(config: &HttpGetConfig) -> ToolSpec {
        spec(config.max_bytes, config.page_bytes)
    }

    /// Turns a failed request into the error the model sees: a refusal found
    /// among the causes, a timeout, or a failure naming the root cause.
    fn request_error(&self, requested: &Url, error: &reqwest::Error) -> ToolError {
        if let Some(refusal) = find_cause::<Refusal>(error) {
            return ToolError::Refused(refusal.to_string());
        }
        if let Some(refused) = find_cause::<NoPublicAddress>(error) {
            // The resolver is only asked about another host when a redirect
            // led there; say so, since the model asked for a different one.
            let via = match requested.host_str() {
                Some(host) if host != refused.host => format!(" (a redirect from {requested} led there)"),
                _ => String::new(),
            };
            return ToolError::Refused(format!("{refused}; {PUBLIC_ONLY}{via}"));
        }
        if error.is_timeout() {
            return ToolError::TimedOut(self.timeout);
        }
        let action = if error.is_connect() {
            "cannot connect to"
        } else {
            "cannot fetch"
        };
        ToolError::Failed(format!("{action} {requested}: {}", root_cause(error)))
    }
}

/// The spec of `http_get` refusing bodies over `max_bytes` and showing
/// `page_bytes` of text at a time.
fn spec(max_bytes: usize, page_bytes: usize) -> ToolSpec {
    ToolSpec {
        name: "http_get".to_owned(),
        description: format!(
            "Fetch a public http or https URL with GET and return it as readable text: a web page's main article as \
             Markdown (headings, lists, links kept; scripts, styles and navigation dropped), JSON pretty-printed, a \
             PDF's text, other text as it is. The first line gives the status, content type, size and what the text \
             is. At most {page_bytes} bytes of text come back at once; a longer text ends with a note giving the \
             `start` to fetch the rest with. Downloads over {max_bytes} bytes and other binary content are refused; \
             private and local addresses are refused unless allowed."
        ),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "Absolute http:// or https:// URL to fetch."},
                "start": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Byte offset into the document's text to start at, as a previous call's note gives it; default 0."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for HttpGet {
    fn spec(&self) -> ToolSpec {
        spec(self.max_bytes, self.page_bytes)
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout + TIMEOUT_MARGIN)
    }

    async fn call(&self, _context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let Arguments { url: text, start } = parse_arguments(arguments)?;
        let url = Url::parse(text.trim())
            .map_err(|error| ToolError::InvalidArguments(format!("{text:?} is not an absolute URL ({error})")))?;
        check_url(&url, &self.policy).map_err(|refusal| ToolError::Refused(refusal.to_string()))?;

        let response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, ACCEPT)
            .send()
            .await
            .map_err(|error| self.request_error(&url, &error))?;
        let content = ContentType::of(response.headers().get(CONTENT_TYPE));
        let status = response.status();
        let mut line = match status.canonical_reason() {
            Some(reason) if !status.is_success() => format!("HTTP {} ({reason}), {}", status.as_u16(), content.label()),
            _ => format!("HTTP {}, {}", status.as_u16(), content.label()),
        };
        if response.url() != &url {
            line.push_str(&format!(" (redirected to {})", response.url()));
        }
        if status.is_success() {
            self.success(&url, line, content, response, start).await
        } else {
            self.not_success(&url, line, content, response).await
        }
    }
}

impl HttpGet {
    /// A 2xx answer: the body read (see `readable`), the page of its text
    /// from `start`; or a refusal if it is not read or is too big.
    async fn success(
        &self,
        url: &Url,
        line: String,
        content: ContentType,
        response: Response,
        start: usize,
    ) -> Result<String, ToolError> {
        if content.is_binary() {
            return Err(ToolError::Refused(
                readable::ReadError::NotRead(content.label().to_owned()).to_string(),
            ));
        }
        let too_big = || {
            ToolError::Refused(format!(
                "the body is larger than {} bytes, the most http_get reads",
                self.max_bytes
            ))
        };
        if response
            .content_length()
            .is_some_and(|length| length > self.max_bytes as u64)
        {
            return Err(too_big());
        }
        let (bytes, more) = read_body(response, self.max_bytes)
            .await
            .map_err(|error| self.request_error(url, &error))?;
        if more {
            return Err(too_big());
        }
        let size = bytes.len();
        // Parsing a large page or a PDF takes milliseconds to seconds: off
        // the async threads.
        let (address, max_pdf_pages) = (url.to_string(), self.max_pdf_pages);
        let reading = tokio::task::spawn_blocking(move || readable::read(&bytes, &content, &address, max_pdf_pages))
            .await
            .map_err(|_| ToolError::Failed("the document could not be read: its reader failed".to_owned()))?
            .map_err(|error| match error {
                readable::ReadError::Pdf(error) => ToolError::Failed(error.to_string()),
                refused => ToolError::Refused(refused.to_string()),
            })?;
        self.shown(format!("{line}, {size} bytes"), &reading, start)
    }

    /// The status line, what the text is, and the page of it from `start`,
    /// with a note on where it was cut.
    fn shown(&self, line: String, reading: &Reading, start: usize) -> Result<String, ToolError> {
        let Reading { text, what, cut } = reading;
        let page = readable::page(text, start, self.page_bytes, *cut).map_err(|PastEnd { start, total }| {
            ToolError::InvalidArguments(format!(
                "start {start} is past the end of the text, which is {total} bytes"
            ))
        })?;
        let mut out = String::with_capacity(page.text.len() + 256);
        out.push_str(&format!("{line}; {what}"));
        if !page.is_whole() {
            out.push_str(&format!(
                "; bytes {}–{} of {} of the text shown",
                page.start, page.end, page.total
            ));
        }
        out.push('\n');
        out.push_str(page.text);
        if let Some(next) = page.next() {
            let unit = if *cut == Cut::Lines { "line" } else { "text" };
            let line_number = text[..page.end].matches('\n').count() + 1;
            let lines = text.matches('\n').count() + 1;
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!(
                "[cut at byte {next} of {total} ({unit} {line_number} of {lines}); \
                 call http_get with the same url and \"start\": {next} for the rest]",
                total = page.total
            ));
        }
        Ok(out)
    }

    /// A non-2xx answer is a result, not an error: the status and the start
    /// of the body, which often says what went wrong.
    async fn not_success(
        &self,
        url: &Url,
        line: String,
        content: ContentType,
        response: Response,
    ) -> Result<String, ToolError> {
        if content.is_binary() {
            return Ok(format!("{line}; body not shown"));
        }
        let limit = ERROR_EXCERPT_BYTES.min(self.max_bytes);
        let (bytes, more) = read_body(response, limit)
            .await
            .map_err(|error| self.request_error(url, &error))?;
        let size = if more {
            format!("first {limit} bytes shown")
        } else {
            format!("{} bytes", bytes.len())
        };
        let text = readable::decode(&bytes, content.charset.as_deref(), false).text;
        Ok(format!("{line}, {size}\n{text}"))
    }
}

/// Why a URL (the model's, or a redirect target) is not fetched. Raised by
/// [`check_url`] and the redirect policy; from the latter it reaches us as
/// the source of reqwest's error.
#[derive(Debug, Error)]
enum Refusal {
    #[error("only http and https URLs are fetched, not {0}:")]
    Scheme(String),
    #[error("URLs with a user name or password are not fetched")]
    Userinfo,
    #[error("the URL has no host")]
    NoHost,
    #[error("{0}; {PUBLIC_ONLY}")]
    Literal(Blocked),
    #[error("the redirect to {target} was refused: {reason}")]
    Redirect { target: Url, reason: Box<Refusal> },
    #[error("more than {0} redirects; not following {1}")]
    TooManyRedirects(usize, Url),
}

/// Checks what can be checked about a URL without resolving it: the
/// scheme, the absence of credentials, and an IP-literal host (which reqwest
/// connects to without asking the resolver).
fn check_url(url: &Url, policy: &AddressPolicy) -> Result<(), Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Userinfo);
    }
    let host = url.host_str().ok_or(Refusal::NoHost)?;
    // The same test the connector makes to skip resolving: brackets off, then
    // an IP address (the URL parser has already normalised forms like 0x7f.1).
    match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(address) => policy.check_literal(address).map_err(Refusal::Literal),
        Err(_) => Ok(()),
    }
}

/// Follows at most `max_redirects` redirects, each to a URL that passes
/// [`check_url`]; host names in targets meet the resolver again.
fn redirect_policy(policy: Arc<AddressPolicy>, max_redirects: usize) -> redirect::Policy {
    redirect::Policy::custom(move |attempt| {
        // `previous` includes the original URL, so it counts this redirect.
        if attempt.previous().len() > max_redirects {
            let target = attempt.url().clone();
            return attempt.error(Refusal::TooManyRedirects(max_redirects, target));
        }
        match check_url(attempt.url(), &policy) {
            Ok(()) => attempt.follow(),
            Err(reason) => {
                let target = attempt.url().clone();
                attempt.error(Refusal::Redirect {
                    target,
                    reason: Box::new(reason),
                })
            }
        }
    })
}

/// The first of `error`'s causes (itself included) of type `T`: how our own
/// errors are found again after travelling through reqwest and hyper.
fn find_cause<'a, T: std::error::Error + 'static>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(found) = current.downcast_ref::<T>() {
            return Some(found);
        }
        cause = current.source();
    }
    None
}

/// The innermost cause, which names the actual problem ("Connection refused").
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Streams the body, stopping as soon as it passes `limit` bytes (so a huge
/// answer costs at most one chunk over the limit in memory). Returns at most
/// `limit` bytes and whether the body went on past them.
async fn read_body(mut response: Response, limit: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > limit {
            bytes.extend_from_slice(&chunk[..limit - bytes.len()]);
            return Ok((bytes, true));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, false))
}

#[cfg(test)]
#[path = "http_get_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "http_get_reading_tests.rs"]
mod reading_tests;
