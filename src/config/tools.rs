//! `[tools]`: what the model's tools may touch — the workspace directory, the
//! shell's limits and environment, `http_get`'s reach and how much of a page
//! it hands over at once — and which tools need a person's approval before
//! they run. `[tools.web_search]` is in `web_search.rs`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Problems, SandboxConfig, WebSearchConfig};

pub const DEFAULT_TOOL_TIMEOUT_S: u64 = 30;
pub const DEFAULT_OUTPUT_CAP_BYTES: usize = 16 * 1024;
pub const DEFAULT_REQUIRE_APPROVAL: &[&str] = &["shell", "write_file", "schedule"];

/// `[tools]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// The only directory the file tools and the shell work in; default
    /// `<data_dir>/workspace`. Created at start.
    pub workspace: Option<PathBuf>,
    /// Tools that never run without a person's approval.
    pub require_approval: Vec<String>,
    /// Longest a tool may run, in seconds (the shell has its own limit).
    pub timeout_s: u64,
    /// Most bytes of a tool's output shown to the model; the rest is cut.
    pub output_cap_bytes: usize,
    pub shell: ShellConfig,
    /// What the processes the tools start (the shell's commands) may touch.
    pub sandbox: SandboxConfig,
    pub files: FilesConfig,
    pub http_get: HttpGetConfig,
    pub web_search: WebSearchConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            workspace: None,
            require_approval: DEFAULT_REQUIRE_APPROVAL.iter().map(|s| s.to_string()).collect(),
            timeout_s: DEFAULT_TOOL_TIMEOUT_S,
            output_cap_bytes: DEFAULT_OUTPUT_CAP_BYTES,
            shell: ShellConfig::default(),
            sandbox: SandboxConfig::default(),
            files: FilesConfig::default(),
            http_get: HttpGetConfig::default(),
            web_search: WebSearchConfig::default(),
        }
    }
}

pub const DEFAULT_SHELL: &str = "/bin/sh";
pub const DEFAULT_SHELL_TIMEOUT_S: u64 = 60;
pub const DEFAULT_SHELL_ENV: &[&str] = &["PATH", "LANG", "TZ"];

/// `[tools.shell]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// The shell that runs the command line, as `SHELL -c LINE`.
    pub program: PathBuf,
    /// A command running longer is killed (with everything it started).
    pub timeout_s: u64,
    /// Environment variables passed through from the daemon; every other one
    /// is removed. `HOME` is set to the workspace.
    pub pass_env: Vec<String>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            program: PathBuf::from(DEFAULT_SHELL),
            timeout_s: DEFAULT_SHELL_TIMEOUT_S,
            pass_env: DEFAULT_SHELL_ENV.iter().map(|s| s.to_string()).collect(),
        }
    }
}

pub const DEFAULT_MAX_READ_BYTES: u64 = 256 * 1024;
pub const DEFAULT_MAX_WRITE_BYTES: usize = 1024 * 1024;

/// `[tools.files]`: `read_file`, `list_dir`, `write_file`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    /// Largest file `read_file` opens, in bytes.
    pub max_read_bytes: u64,
    /// Largest content `write_file` writes, in bytes.
    pub max_write_bytes: usize,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self {
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
        }
    }
}

pub const DEFAULT_HTTP_TIMEOUT_S: u64 = 20;
pub const DEFAULT_HTTP_MAX_BYTES: usize = 4 * 1024 * 1024;
pub const DEFAULT_HTTP_MAX_REDIRECTS: usize = 5;
/// Below [`DEFAULT_OUTPUT_CAP_BYTES`], with room for the lines around the text.
pub const DEFAULT_HTTP_PAGE_BYTES: usize = 12 * 1024;
pub const DEFAULT_HTTP_MAX_PDF_PAGES: usize = 50;
/// Room the status line and the note on where the text was cut take beside
/// a page of text, so that the tool box's output cap never cuts the note.
pub const HTTP_PAGE_MARGIN_BYTES: usize = 512;

/// `[tools.http_get]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpGetConfig {
    /// Whole request, in seconds.
    pub timeout_s: u64,
    /// Largest body downloaded, in bytes; a bigger one is refused.
    pub max_bytes: usize,
    /// Most bytes of the text read from a page (the article as Markdown,
    /// pretty-printed JSON, a PDF's text) returned by one call; the model
    /// asks for the rest with `start`.
    pub page_bytes: usize,
    /// Most pages of a PDF whose text is read; the rest are left out, and
    /// the model is told.
    pub max_pdf_pages: usize,
    /// Redirects followed; each target is checked like the first.
    pub max_redirects: usize,
    /// Let the model reach loopback, private, link-local and other
    /// non-public addresses (your LAN, cloud metadata services). Off: a name
    /// that resolves to such an address is refused.
    pub allow_private: bool,
}

impl Default for HttpGetConfig {
    fn default() -> Self {
        Self {
            timeout_s: DEFAULT_HTTP_TIMEOUT_S,
            max_bytes: DEFAULT_HTTP_MAX_BYTES,
            page_bytes: DEFAULT_HTTP_PAGE_BYTES,
            max_pdf_pages: DEFAULT_HTTP_MAX_PDF_PAGES,
            max_redirects: DEFAULT_HTTP_MAX_REDIRECTS,
            allow_private: false,
        }
    }
}

impl ToolsConfig {
    /// Notes what is wrong with `[tools]` and its tools' sections.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.timeout_s > 0, "tools.timeout_s must be at least 1");
        problems.check(
            self.output_cap_bytes >= 256,
            "tools.output_cap_bytes must be at least 256",
        );
        problems.check(self.shell.timeout_s > 0, "tools.shell.timeout_s must be at least 1");
        problems.check(
            self.shell.program.is_absolute(),
            format!(
                "tools.shell.program {} must be an absolute path",
                self.shell.program.display()
            ),
        );
        problems.check(
            self.http_get.timeout_s > 0,
            "tools.http_get.timeout_s must be at least 1",
        );
        problems.check(
            self.http_get.max_bytes > 0,
            "tools.http_get.max_bytes must be at least 1",
        );
        problems.check(
            self.http_get.page_bytes >= 256,
            "tools.http_get.page_bytes must be at least 256",
        );
        let room = self.output_cap_bytes.saturating_sub(HTTP_PAGE_MARGIN_BYTES);
        problems.check(
            self.http_get.page_bytes <= room,
            format!(
                "tools.http_get.page_bytes ({}) must be at most tools.output_cap_bytes ({}) less {HTTP_PAGE_MARGIN_BYTES} \
                 for the lines around it, or the note saying where to go on would be cut",
                self.http_get.page_bytes, self.output_cap_bytes
            ),
        );
        problems.check(
            self.http_get.max_pdf_pages > 0,
            "tools.http_get.max_pdf_pages must be at least 1",
        );
        self.web_search.check(problems);
        self.sandbox.check("tools.sandbox", problems);
    }
}
