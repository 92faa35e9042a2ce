//! `passepartout web --open`: the sign-in link opened in this machine's
//! browser without putting it on any command line, where every local user
//! reads it in `/proc` and could redeem it first. The link goes into an
//! HTML page that sends the browser on to it, written 0600 in a folder of
//! this user's own (0700, in `$XDG_RUNTIME_DIR` when set, else the
//! temporary folder); the opener is given the page's path. The link works
//! once and for 5 minutes, so a page left behind holds nothing of use.
//!
//! The opener is `open` on macOS, `xdg-open` elsewhere, or the program
//! `PASSEPARTOUT_OPENER` names.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The variable naming another opener.
pub const OPENER_VARIABLE: &str = "PASSEPARTOUT_OPENER";

/// The page's file name.
const PAGE: &str = "sign-in.html";

/// Opens `link` through a page only this user can read; the link is
/// printed already, so a failure only says so.
pub fn open_in_browser(link: &str) -> ExitCode {
    let opener = std::env::var_os(OPENER_VARIABLE)
        .unwrap_or_else(|| OsString::from(if cfg!(target_os = "macos") { "open" } else { "xdg-open" }));
    let shown = opener.to_string_lossy().into_owned();
    let page = match write_page(link) {
        Ok(page) => page,
        Err(error) => {
            eprintln!("passepartout: cannot write the page that opens the link: {error}; open the link above yourself");
            return ExitCode::FAILURE;
        }
    };
    match std::process::Command::new(&opener).arg(&page).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("passepartout: {shown} failed ({status}); open the link above yourself");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("passepartout: cannot run {shown}: {error}; open the link above yourself");
            ExitCode::FAILURE
        }
    }
}

/// Writes the page sending the browser to `link`, in a new folder of this
/// user's own: its path.
fn write_page(link: &str) -> std::io::Result<PathBuf> {
    let parent = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && dir.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // Made 0700 with a name nobody can guess, so no one else can put a
    // file or a link where the page goes.
    let folder = tempfile::Builder::new()
        .prefix("passepartout-sign-in-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&parent)?
        .keep();
    let page = folder.join(PAGE);
    write_private(&page, &redirect_page(link))?;
    Ok(page)
}

/// `text` in a new file at `path` only its owner may read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// A page that sends the browser on to `link` at once, with the link to
/// follow by hand as well.
fn redirect_page(link: &str) -> String {
    let link = attribute(link);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"0;url={link}\">\
         <title>passepartout: signing in</title></head>\n\
         <body><p><a href=\"{link}\">Sign in to the passepartout dashboard</a></p></body></html>\n"
    )
}

/// `text` as an HTML attribute's quoted value.
fn attribute(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '"' => "&quot;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_the_owners_alone_and_carries_the_link_escaped() {
        let page = write_page("http://127.0.0.1:8787/sign-in/abc\"<x>").unwrap();
        let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let folder = page.parent().unwrap();
        let folder_mode = std::fs::metadata(folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder_mode, 0o700);
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(
            text.contains("content=\"0;url=http://127.0.0.1:8787/sign-in/abc&quot;&lt;x&gt;\""),
            "{text}"
        );
        std::fs::remove_dir_all(folder).unwrap();
    }
}
