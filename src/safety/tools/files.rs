//! The file tools: `read_file`, `list_dir` and `write_file`, all confined to
//! the [`Workspace`] (see its module doc for the path rules).
//!
//! Every operation goes through the workspace's [`cap_std::fs::Dir`], so no
//! path, link or race leads outside it. Files are opened non-blocking so that
//! a FIFO the model made with the shell cannot hang a worker thread; anything
//! but a regular file is refused. File-system calls block, so each call runs
//! in [`tokio::task::spawn_blocking`].

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use cap_std::fs::{File, OpenOptions, OpenOptionsExt};
use serde::Deserialize;
use serde_json::json;

use super::workspace::{Workspace, io_error};
use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::config::FilesConfig;
use crate::model::llm::ToolSpec;

/// Most entries `list_dir` shows; the rest are counted, not listed.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// The three file tools over one workspace, ready for a [`super::ToolBox`].
pub fn tools(workspace: &Arc<Workspace>, config: &FilesConfig) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFileTool::new(workspace.clone(), config)),
        Arc::new(ListDirTool::new(workspace.clone())),
        Arc::new(WriteFileTool::new(workspace.clone(), config)),
    ]
}

/// The specs of the tools [`tools`] sets up for `config`, without a workspace.
pub fn specs(config: &FilesConfig) -> Vec<ToolSpec> {
    vec![
        read_spec(config.max_read_bytes),
        list_spec(),
        write_spec(config.max_write_bytes),
    ]
}

/// `read_file {path}`: a UTF-8 text file's content.
pub struct ReadFileTool {
    workspace: Arc<Workspace>,
    max_bytes: u64,
}

impl ReadFileTool {
    /// Reads files of at most `config.max_read_bytes`.
    pub fn new(workspace: Arc<Workspace>, config: &FilesConfig) -> Self {
        Self {
            workspace,
            max_bytes: config.max_read_bytes,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArguments {
    path: String,
}

/// The spec of `read_file` refusing files over `max_bytes`.
fn read_spec(max_bytes: u64) -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: format!(
            "Read a UTF-8 text file in the workspace and return its content. \
             Paths are relative to the workspace root; absolute paths and `..` are refused. \
             Binary files and files over {max_bytes} bytes are refused."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace root, e.g. `notes/todo.md`."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        read_spec(self.max_bytes)
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let ReadArguments { path } = parse_arguments(arguments)?;
        let workspace = self.workspace.clone();
        let max_bytes = self.max_bytes;
        blocking(move || read_text(&workspace, &path, max_bytes)).await
    }
}

fn read_text(workspace: &Workspace, path: &str, max_bytes: u64) -> Result<String, ToolError> {
    let relative = workspace.resolve(path)?;
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(nonblocking());
    let file = open(workspace, path, &relative, &options)?;
    let size = file.metadata().map_err(|error| io_error(path, error))?.len();
    if size > max_bytes {
        return Err(too_big(path, size, max_bytes));
    }
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| io_error(path, error))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(path, bytes.len() as u64, max_bytes));
    }
    if bytes.contains(&0) {
        return Err(ToolError::Refused(format!(
            "`{path}` looks binary (it contains NUL bytes); read_file only returns UTF-8 text"
        )));
    }
    match String::from_utf8(bytes) {
        Ok(text) if text.is_empty() => Ok("(empty file)".into()),
        Ok(text) => Ok(text),
        Err(error) => Err(ToolError::Refused(format!(
            "`{path}` is not UTF-8 text (invalid byte at offset {}); read_file only returns UTF-8 text",
            error.utf8_error().valid_up_to()
        ))),
    }
}

fn too_big(path: &str, size: u64, max_bytes: u64) -> ToolError {
    ToolError::Refused(format!(
        "`{path}` is {size} bytes, more than read_file's limit of {max_bytes} bytes; \
         read a part of it with the shell instead (e.g. `head -c {max_bytes}` or `sed -n 1,200p`)"
    ))
}

/// `list_dir {path?}`: a directory's entries.
pub struct ListDirTool {
    workspace: Arc<Workspace>,
}

impl ListDirTool {
    /// Lists directories of the workspace.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArguments {
    #[serde(default)]
    path: Option<String>,
}

/// The spec of `list_dir`.
fn list_spec() -> ToolSpec {
    ToolSpec {
        name: "list_dir".into(),
        description: format!(
            "List a directory in the workspace, one entry per line, sorted by name. \
             Directories end with `/`; symbolic links are shown as `name -> target`. \
             At most {MAX_LIST_ENTRIES} entries are shown."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory path relative to the workspace root; omit it for the root."}
            },
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for ListDirTool {
    fn spec(&self) -> ToolSpec {
        list_spec()
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let ListArguments { path } = parse_arguments(arguments)?;
        // Models often send "" for an optional path: that means the root too.
        let path = path.filter(|path| !path.is_empty()).unwrap_or_else(|| ".".into());
        let workspace = self.workspace.clone();
        blocking(move || list(&workspace, &path)).await
    }
}

fn list(workspace: &Workspace, path: &str) -> Result<String, ToolError> {
    let relative = workspace.resolve(path)?;
    let entries = workspace
        .dir()
        .read_dir(&relative)
        .map_err(|error| io_error(path, error))?;
    let mut lines = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| io_error(path, error))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|error| io_error(path, error))?;
        let line = if kind.is_dir() {
            format!("{name}/")
        } else if kind.is_symlink() {
            match workspace.dir().read_link_contents(relative.join(&name)) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => format!("{name} -> (unreadable link)"),
            }
        } else if kind.is_file() {
            name
        } else {
            format!("{name} (special file)")
        };
        lines.push(line);
    }
    if lines.is_empty() {
        return Ok("(empty directory)".into());
    }
    lines.sort_unstable();
    let left_out = lines.len().saturating_sub(MAX_LIST_ENTRIES);
    lines.truncate(MAX_LIST_ENTRIES);
    let mut text = lines.join("\n");
    if left_out > 0 {
        text.push_str(&format!(
            "\n[{left_out} more entries not shown; list a subdirectory or use the shell to filter]"
        ));
    }
    Ok(text)
}

/// `write_file {path, content, append?}`: writes text to a file.
pub struct WriteFileTool {
    workspace: Arc<Workspace>,
    max_bytes: usize,
}

impl WriteFileTool {
    /// Writes at most `config.max_write_bytes` per call.
    pub fn new(workspace: Arc<Workspace>, config: &FilesConfig) -> Self {
        Self {
            workspace,
            max_bytes: config.max_write_bytes,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArguments {
    path: String,
    content: String,
    #[serde(default)]
    append: bool,
}

/// The spec of `write_file` writing at most `max_bytes` per call.
fn write_spec(max_bytes: usize) -> ToolSpec {
    ToolSpec {
        name: "write_file".into(),
        description: format!(
            "Write text to a file in the workspace, creating it and any missing parent directories. \
             Replaces the file's content unless `append` is true. \
             At most {max_bytes} bytes per call. Returns the number of bytes written."
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace root, e.g. `notes/todo.md`."},
                "content": {"type": "string", "description": "The text to write."},
                "append": {"type": "boolean", "description": "Add to the end of the file instead of replacing it. Default false."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        write_spec(self.max_bytes)
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let arguments: WriteArguments = parse_arguments(arguments)?;
        let size = arguments.content.len();
        if size > self.max_bytes {
            return Err(ToolError::Refused(format!(
                "the content is {size} bytes, more than write_file's limit of {} bytes per call; \
                 write it in smaller parts with `append: true`",
                self.max_bytes
            )));
        }
        let workspace = self.workspace.clone();
        blocking(move || write(&workspace, arguments)).await
    }
}

fn write(workspace: &Workspace, arguments: WriteArguments) -> Result<String, ToolError> {
    let WriteArguments { path, content, append } = arguments;
    let relative = workspace.resolve(&path)?;
    if let Some(parent) = relative.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        workspace
            .dir()
            .create_dir_all(parent)
            .map_err(|error| io_error(&path, error))?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create(true).custom_flags(nonblocking());
    if append {
        options.append(true);
    } else {
        options.truncate(true);
    }
    let mut file = open(workspace, &path, &relative, &options)?;
    file.write_all(content.as_bytes())
        .map_err(|error| io_error(&path, error))?;
    let verb = if append { "appended" } else { "wrote" };
    Ok(format!("{verb} {} bytes to `{path}`", content.len()))
}

/// Opens `relative` through the workspace handle and refuses anything but a
/// regular file (a directory gets its own hint).
pub(super) fn open(
    workspace: &Workspace,
    given: &str,
    relative: &Path,
    options: &OpenOptions,
) -> Result<File, ToolError> {
    let file = workspace
        .dir()
        .open_with(relative, options)
        .map_err(|error| io_error(given, error))?;
    let metadata = file.metadata().map_err(|error| io_error(given, error))?;
    if metadata.is_dir() {
        return Err(io_error(given, std::io::ErrorKind::IsADirectory.into()));
    }
    if !metadata.is_file() {
        return Err(ToolError::Refused(format!(
            "`{given}` is not a regular file (a pipe, socket or device); the file tools only handle regular files"
        )));
    }
    Ok(file)
}

/// `O_NONBLOCK`: opening a FIFO must not wait for its other end.
pub(super) fn nonblocking() -> i32 {
    rustix::fs::OFlags::NONBLOCK.bits() as i32
}

/// Runs blocking file-system work off the async threads.
pub(super) async fn blocking<F>(work: F) -> Result<String, ToolError>
where
    F: FnOnce() -> Result<String, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::Failed(format!("the file operation did not complete: {error}")))?
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
