//! The workspace: the one directory the file tools (`read_file`, `list_dir`,
//! `write_file`) and the shell work in.
//!
//! Paths come from the model, so they are data to check, never to trust. A
//! path the model gives is resolved by [`Workspace::resolve`], which refuses
//! ([`ToolError::Refused`], with the reason) when the path
//!
//! - is empty or contains a NUL byte;
//! - is absolute (`/etc/passwd`): paths are relative to the workspace root;
//! - has any `..` component (`../x`, `a/../../x`), even one that would stay
//!   inside: the rule is simple to state and to follow;
//! - passes through an existing symbolic link (any component, the last one
//!   included) whose target is absolute or lies outside the workspace.
//!
//! A relative symbolic link that stays inside the workspace is followed.
//!
//! Those checks exist to give the model a precise reason. The confinement
//! itself comes from [`cap_std::fs::Dir`]: every file operation goes through
//! the workspace's directory handle, which resolves paths beneath it (with
//! `openat2(RESOLVE_BENEATH)` on Linux), so a link swapped in between the check
//! and the operation still cannot lead outside. The shell is confined
//! another way: the kernel's Landlock, set up by `crate::safety::sandbox`.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use thiserror::Error;

use super::ToolError;

/// The workspace could not be set up at start.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    /// The directory did not exist and could not be created.
    #[error("cannot create the workspace directory {path}: {source}")]
    Create { path: PathBuf, source: io::Error },
    /// The directory exists (or was created) but could not be opened.
    #[error("cannot open the workspace directory {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
}

/// The directory the file tools and the shell work in, opened once.
#[derive(Debug)]
pub struct Workspace {
    /// Canonical absolute path, for the shell's working directory and `HOME`.
    root: PathBuf,
    /// Handle every file operation goes through; lookups stay beneath it.
    dir: Dir,
}

impl Workspace {
    /// Opens the workspace at `path`, first creating it (and any missing
    /// parents) with mode 0700 if it does not exist. An existing directory is
    /// used as it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let path = path.as_ref();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|source| WorkspaceError::Create {
                path: path.to_owned(),
                source,
            })?;
        let open_error = |source| WorkspaceError::Open {
            path: path.to_owned(),
            source,
        };
        let root = std::fs::canonicalize(path).map_err(open_error)?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).map_err(open_error)?;
        Ok(Self { root, dir })
    }

    /// The workspace's canonical absolute path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The confined directory handle; open files through it, never by path.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Checks a model-given `path` against the rules in the module doc and
    /// returns it as a clean relative path (`.` components dropped; `.` itself
    /// for the root). Reads link metadata, so call it from blocking code.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let relative = lexical(path)?;
        self.check_links(path, &relative)?;
        Ok(relative)
    }

    /// Refuses if an existing symbolic link along `relative` has an absolute
    /// target or leads outside the workspace. Stops at the first component
    /// that does not exist: nothing beyond it can be a link yet.
    fn check_links(&self, given: &str, relative: &Path) -> Result<(), ToolError> {
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            prefix.push(component);
            let Ok(metadata) = self.dir.symlink_metadata(&prefix) else {
                return Ok(());
            };
            if !metadata.is_symlink() {
                continue;
            }
            let shown = prefix.display();
            let target = self
                .dir
                .read_link_contents(&prefix)
                .map_err(|error| io_error(given, error))?;
            if target.is_absolute() {
                return Err(ToolError::Refused(format!(
                    "`{shown}` (in `{given}`) is a symbolic link with an absolute target; \
                     only relative links that stay inside the workspace are followed"
                )));
            }
            if !self.stays_inside(&prefix, &target) {
                return Err(ToolError::Refused(format!(
                    "`{shown}` (in `{given}`) is a symbolic link that points outside the workspace; \
                     use paths inside the workspace only"
                )));
            }
        }
        Ok(())
    }

    /// Whether the link at `link` (relative to the root, its parents already
    /// checked) with relative `target` lands inside the workspace.
    fn stays_inside(&self, link: &Path, target: &Path) -> bool {
        let parent = link.parent().unwrap_or(Path::new(""));
        let Ok(parent) = std::fs::canonicalize(self.root.join(parent)) else {
            return false;
        };
        let landing = parent.join(target);
        // An existing target is judged by where it really is (it may pass
        // through further links); a dangling one by its normalized path.
        let landing = std::fs::canonicalize(&landing).unwrap_or_else(|_| normalize(&landing));
        landing.starts_with(&self.root)
    }
}

/// The lexical rules: not empty, no NUL, relative, no `..`.
fn lexical(path: &str) -> Result<PathBuf, ToolError> {
    if path.is_empty() {
        return Err(ToolError::Refused(
            "the path is empty; give a path relative to the workspace root, e.g. `notes.txt`".into(),
        ));
    }
    if path.contains('\0') {
        return Err(ToolError::Refused("the path contains a NUL character".into()));
    }
    let mut relative = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => relative.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(ToolError::Refused(format!(
                    "`{path}` contains `..`; give a path inside the workspace without `..` components"
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::Refused(format!(
                    "`{path}` is absolute; give a path relative to the workspace root instead"
                )));
            }
        }
    }
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    Ok(relative)
}

/// `path` with `.` and `..` removed lexically (for dangling link targets).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// An I/O error on the model-given `path` as a message that says what to do.
pub fn io_error(path: &str, error: io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::NotFound => {
            ToolError::Failed(format!("`{path}` does not exist; use list_dir to see what is there"))
        }
        io::ErrorKind::NotADirectory => ToolError::Failed(format!(
            "a component of `{path}` is a file, not a directory; use list_dir to see what is there"
        )),
        io::ErrorKind::IsADirectory => ToolError::Failed(format!(
            "`{path}` is a directory; use list_dir to see its entries, or give a file path"
        )),
        // cap-std reports a lookup that would leave the workspace (a link
        // swapped in after our own check) as permission denied, too.
        io::ErrorKind::PermissionDenied => {
            ToolError::Refused(format!("`{path}`: {error}; it is not accessible from the workspace"))
        }
        _ => ToolError::Failed(format!("`{path}`: {error}")),
    }
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
