//! `send_file {path, caption?}`: sends a file from the workspace to the
//! conversation, as a document (or a photo, where the platform shows images
//! inline).
//!
//! The path is confined to the [`Workspace`] like `read_file`'s, and the
//! file's size is checked against what the conversation's platform takes
//! (its gateway's [`Upload`]), so the model hears at once, in words it can
//! pass on, why a file cannot go.
//! The file is then copied out of the workspace (through the workspace's
//! confined handle) into the daemon's `outgoing/` folder: the outbox keeps
//! that copy's path until the gateway has sent it, so neither a later change
//! in the workspace nor a restart changes what is sent, and the copy goes
//! once it is delivered. A gateway whose client runs on this machine (the
//! local socket) is the exception: it reads the file where it is, so it is
//! given the workspace path itself, which stays. The file is staged in the turn's [`Outgoing`] and
//! committed with the turn, so it is delivered through the outbox exactly
//! once, with the turn's answer.
//!
//! A copy no outbox entry waits on (its turn failed before it committed, or
//! the daemon stopped between a delivery and the removal) is removed at the
//! next start ([`prune_outgoing`]).
//!
//! It needs no approval by default: the person asked for the file, and it
//! goes only to the conversation the turn is in. `tools.require_approval`
//! can still hold it like any tool.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use cap_std::fs::{OpenOptions, OpenOptionsExt};
use passepartout_gateway::{OutboundBody, OutboundFile};
use serde::Deserialize;
use serde_json::json;

use super::files::{blocking, nonblocking, open};
use super::uploads::{Upload, Uploads};
use super::workspace::{Workspace, io_error};
use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::model::llm::ToolSpec;
use crate::store::{Store, StoreError};

/// The tool's name.
pub const SEND_FILE: &str = "send_file";
/// The longest caption taken, in characters.
pub const MAX_CAPTION_CHARS: usize = 1024;

/// Sends workspace files to the conversation.
pub struct SendFileTool {
    workspace: Arc<Workspace>,
    /// What each gateway takes.
    uploads: Uploads,
    /// Where the copies wait for delivery (`<data_dir>/outgoing`), made
    /// when the first file is sent.
    outgoing: PathBuf,
}

impl SendFileTool {
    pub fn new(workspace: Arc<Workspace>, outgoing: PathBuf, uploads: Uploads) -> Self {
        Self {
            workspace,
            uploads,
            outgoing,
        }
    }

    /// The tool's spec.
    pub fn spec_for() -> ToolSpec {
        ToolSpec {
            name: SEND_FILE.into(),
            description: "Send a file from the workspace to the person in this conversation, as a document \
                          (an image may show as a photo). Use it when the person asks for a file, or to \
                          deliver one you made. The file goes out with your answer; say in your answer what \
                          you sent. Paths are relative to the workspace root."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. `reports/summary.pdf`."},
                    "caption": {"type": "string", "description": "A short text shown with the file (optional)."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    #[serde(default)]
    caption: Option<String>,
}

#[async_trait]
impl Tool for SendFileTool {
    fn spec(&self) -> ToolSpec {
        Self::spec_for()
    }

    async fn call(&self, context: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let Arguments { path, caption } = parse_arguments(arguments)?;
        let caption = caption.filter(|caption| !caption.trim().is_empty());
        if let Some(caption) = &caption
            && caption.chars().count() > MAX_CAPTION_CHARS
        {
            return Err(ToolError::InvalidArguments(format!(
                "the caption is longer than {MAX_CAPTION_CHARS} characters; shorten it, or say the rest in your answer"
            )));
        }
        let limit = self.uploads.of(&context.conversation.gateway);
        let workspace = self.workspace.clone();
        let outgoing = self.outgoing.clone();
        let staged = context.outgoing.clone();
        blocking(move || {
            let mut file = copy_out(&workspace, &path, &outgoing, &limit)?;
            file.caption = caption;
            let said = format!(
                "`{path}` ({}, {}) goes to the person with your answer.",
                file.media_type,
                size_text(file.size)
            );
            staged.stage(file);
            Ok(said)
        })
        .await
    }
}

/// Checks the model-given `path` and copies the file into a folder of its
/// own under `outgoing` (unless the gateway reads it in place): the file to send.
fn copy_out(workspace: &Workspace, path: &str, outgoing: &Path, limit: &Upload) -> Result<OutboundFile, ToolError> {
    let relative = workspace.resolve(path)?;
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(nonblocking());
    let source = open(workspace, path, &relative, &options)?;
    let size = source.metadata().map_err(|error| io_error(path, error))?.len();
    if size > limit.max_bytes {
        return Err(ToolError::Refused(format!(
            "`{path}` is {}, and {} takes files of at most {}; make it smaller (compress it, or split it) and send that",
            size_text(size),
            limit.platform,
            size_text(limit.max_bytes)
        )));
    }
    if size == 0 {
        return Err(ToolError::Refused(format!(
            "`{path}` is empty; platforms do not send empty files"
        )));
    }
    let name = relative
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| io_error(path, std::io::ErrorKind::IsADirectory.into()))?;
    let media_type = mime_guess::from_path(&name)
        .first_or_octet_stream()
        .essence_str()
        .to_owned();
    if !limit.copied {
        return Ok(OutboundFile {
            path: workspace.root().join(&relative).to_string_lossy().into_owned(),
            name,
            media_type,
            size,
            caption: None,
            temporary: false,
        });
    }
    let folder = outgoing.join(format!("{:016x}", rand::random::<u64>()));
    let failed = |error: std::io::Error| ToolError::Failed(format!("cannot keep `{path}` for sending: {error}"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&folder)
        .map_err(failed)?;
    let copy = folder.join(&name);
    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&copy)
        .map_err(failed)?;
    // The size is read again from what was copied: the file may have changed.
    let copied = std::io::copy(&mut source.take(limit.max_bytes + 1), &mut target)
        .and_then(|copied| target.flush().map(|()| copied))
        .and_then(|copied| target.sync_all().map(|()| copied));
    let copied = match copied {
        Ok(copied) if copied <= limit.max_bytes => copied,
        Ok(_) => {
            remove_copy(&copy);
            return Err(ToolError::Refused(format!(
                "`{path}` grew past {}'s limit of {} while it was read",
                limit.platform,
                size_text(limit.max_bytes)
            )));
        }
        Err(error) => {
            remove_copy(&copy);
            return Err(failed(error));
        }
    };
    Ok(OutboundFile {
        path: copy.to_string_lossy().into_owned(),
        media_type,
        name,
        size: copied,
        caption: None,
        temporary: true,
    })
}

/// Removes a copy made for sending, and its folder.
pub fn remove_copy(copy: &Path) {
    if let Err(error) = std::fs::remove_file(copy) {
        tracing::warn!(path = %copy.display(), %error, "cannot remove a file copied for sending");
    }
    if let Some(folder) = copy.parent() {
        let _ = std::fs::remove_dir(folder);
    }
}

/// Removes every folder of `outgoing` that no waiting outbox entry sends a
/// copy from; returns how many went. Run at start, before anything is
/// delivered or sent.
pub fn prune_outgoing(outgoing: &Path, store: &Store) -> Result<usize, StoreError> {
    let Ok(folders) = std::fs::read_dir(outgoing) else {
        return Ok(0);
    };
    let mut waiting = HashSet::new();
    for conversation in store.outbox_conversations()? {
        for entry in store.outbox_for(&conversation)? {
            if let OutboundBody::File(file) = &entry.outbound.body
                && let Some(folder) = Path::new(&file.path).parent()
            {
                waiting.insert(folder.to_owned());
            }
        }
    }
    let mut pruned = 0;
    for folder in folders.flatten() {
        let path = folder.path();
        if waiting.contains(&path) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => pruned += 1,
            Err(error) => tracing::warn!(path = %path.display(), %error, "cannot remove a copy nothing waits on"),
        }
    }
    if pruned > 0 {
        tracing::info!(pruned, "removed files copied for sending that nothing waits on");
    }
    Ok(pruned)
}

/// `size` for people: bytes, KB or MB.
pub fn size_text(size: u64) -> String {
    match size {
        0..1_000 => format!("{size} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", size as f64 / 1e3),
        _ => format!("{:.1} MB", size as f64 / 1e6),
    }
}

#[cfg(test)]
#[path = "send_file_tests.rs"]
mod tests;
