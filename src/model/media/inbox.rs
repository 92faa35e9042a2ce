//! The workspace's `inbox/`: where files people send are saved, so the
//! model can read them with `read_file`. The sender's file name is
//! untrusted: [`safe_name`] keeps only its last component, without control
//! characters or leading dots; a name already taken gets " (2)", " (3)", …
//! before its extension, so nothing is ever overwritten. Files are created
//! through a directory handle (`cap-std`), beneath the inbox only.

use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use super::store::extension;

/// The inbox's folder, relative to the workspace root.
pub const INBOX: &str = "inbox";

/// Longest file name kept, in bytes: file systems take 255, and a copy's
/// " (1000)" must still fit.
const MAX_NAME_BYTES: usize = 200;

/// Names tried with a number before giving up.
const MAX_COPIES: u32 = 1000;

/// The workspace's inbox.
#[derive(Clone, Debug)]
pub struct Inbox {
    workspace: PathBuf,
}

impl Inbox {
    /// The inbox of the workspace at `workspace`.
    pub fn new(workspace: PathBuf) -> Self {
        Self { workspace }
    }

    /// Saves `bytes` under the sender's `name` made safe (or one made from
    /// `mime`), never over an existing file; returns the path relative to the
    /// workspace, e.g. `inbox/report (2).pdf`. Blocking.
    pub fn save(&self, name: Option<&str>, mime: Option<&str>, bytes: &[u8]) -> io::Result<String> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.workspace)?;
        let root = Dir::open_ambient_dir(&self.workspace, ambient_authority())?;
        root.create_dir_all(INBOX)?;
        let inbox = root.open_dir(INBOX)?;
        let wanted = safe_name(name, mime);
        for copy in 1..=MAX_COPIES {
            let candidate = numbered(&wanted, copy);
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            match inbox.open_with(&candidate, &options) {
                Ok(mut file) => {
                    file.write_all(bytes)?;
                    file.sync_all()?;
                    return Ok(format!("{INBOX}/{candidate}"));
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{MAX_COPIES} files called {wanted:?} are in the inbox already"),
        ))
    }
}

/// A file name that is one plain component: the last part of `name` after
/// any `/` or `\`, without control characters, leading dots or surrounding
/// blanks, at most [`MAX_NAME_BYTES`] bytes with its extension kept;
/// `file.<ext from mime>` when nothing is left.
pub fn safe_name(name: Option<&str>, mime: Option<&str>) -> String {
    let last = name.unwrap_or_default().rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim();
    if cleaned.is_empty() {
        return format!("file.{}", extension(mime.unwrap_or_default()));
    }
    if cleaned.len() <= MAX_NAME_BYTES {
        return cleaned.to_owned();
    }
    let (stem, ext) = split_extension(cleaned);
    let mut room = MAX_NAME_BYTES.saturating_sub(ext.len());
    // On a character's boundary: a name cut inside one is no UTF-8.
    while !stem.is_char_boundary(room) {
        room -= 1;
    }
    format!("{}{ext}", &stem[..room])
}

/// `name` for the `copy`th file of that name: `a.pdf`, `a (2).pdf`, ….
fn numbered(name: &str, copy: u32) -> String {
    if copy == 1 {
        return name.to_owned();
    }
    let (stem, ext) = split_extension(name);
    format!("{stem} ({copy}){ext}")
}

/// `("report", ".pdf")`; a name without a dot (or only a leading one) has no extension.
fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(dot) if dot > 0 && name.len() - dot <= 10 => name.split_at(dot),
        _ => (name, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_paths_control_characters_and_leading_dots() {
        assert_eq!(safe_name(Some("../../etc/passwd"), None), "passwd");
        assert_eq!(safe_name(Some("C:\\Users\\a\\notes.txt"), None), "notes.txt");
        assert_eq!(safe_name(Some(".bashrc"), None), "bashrc");
        assert_eq!(safe_name(Some("a\u{0}b\nc.txt"), None), "abc.txt");
        assert_eq!(safe_name(Some(" .. "), Some("application/pdf")), "file.pdf");
        assert_eq!(safe_name(None, None), "file.bin");
        let cjk = format!("{}.pdf", "报告".repeat(100));
        let kept = safe_name(Some(&cjk), None);
        assert!(kept.len() <= MAX_NAME_BYTES && kept.ends_with("报.pdf"), "{kept}");
        assert!(numbered(&kept, MAX_COPIES).len() <= 255, "a copy's name fits too");
        let long = format!("{}.pdf", "x".repeat(300));
        let kept = safe_name(Some(&long), None);
        assert_eq!(kept.len(), MAX_NAME_BYTES);
        assert!(kept.ends_with(".pdf"));
    }

    #[test]
    fn a_name_taken_gets_a_number_and_nothing_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = Inbox::new(dir.path().join("workspace"));
        assert_eq!(
            inbox.save(Some("report.pdf"), None, b"one").unwrap(),
            "inbox/report.pdf"
        );
        assert_eq!(
            inbox.save(Some("report.pdf"), None, b"two").unwrap(),
            "inbox/report (2).pdf"
        );
        assert_eq!(inbox.save(Some("README"), None, b"r").unwrap(), "inbox/README");
        assert_eq!(inbox.save(Some("README"), None, b"r").unwrap(), "inbox/README (2)");
        let read = |name: &str| std::fs::read(dir.path().join("workspace/inbox").join(name)).unwrap();
        assert_eq!(read("report.pdf"), b"one");
        assert_eq!(read("report (2).pdf"), b"two");
    }

    #[test]
    fn a_link_planted_in_the_inbox_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inbox")).unwrap();
        let target = outside.path().join("victim");
        std::os::unix::fs::symlink(&target, dir.path().join("inbox/a.txt")).unwrap();
        let inbox = Inbox::new(dir.path().to_path_buf());
        assert_eq!(inbox.save(Some("a.txt"), None, b"x").unwrap(), "inbox/a (2).txt");
        assert!(!target.exists());
    }
}
