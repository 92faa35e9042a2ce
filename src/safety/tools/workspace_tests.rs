//! Tests of the workspace's path rules, on real directories and links.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

fn setup() -> (tempfile::TempDir, Workspace, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(temp.path().join("ws")).unwrap();
    let outside = temp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    (temp, workspace, outside)
}

fn refusal(result: Result<PathBuf, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn open_creates_a_private_directory_and_canonicalizes_it() {
    let temp = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(temp.path().join("a/./b")).unwrap();
    let expected = std::fs::canonicalize(temp.path()).unwrap().join("a/b");
    assert_eq!(workspace.root(), expected);
    let mode = std::fs::metadata(&expected).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    // Opening it again uses the existing directory.
    assert_eq!(Workspace::open(&expected).unwrap().root(), expected);
}

#[test]
fn open_fails_on_a_file() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(temp.path().join("file"), "").unwrap();
    assert!(matches!(
        Workspace::open(temp.path().join("file")),
        Err(WorkspaceError::Create { .. })
    ));
}

#[test]
fn lexical_rules_refuse_with_a_reason() {
    let (_temp, workspace, _) = setup();
    assert!(refusal(workspace.resolve("")).contains("empty"));
    assert!(refusal(workspace.resolve("a\0b")).contains("NUL"));
    assert!(refusal(workspace.resolve("/etc/passwd")).contains("absolute"));
    assert!(refusal(workspace.resolve("../x")).contains("`..`"));
    assert!(refusal(workspace.resolve("a/../../x")).contains("`..`"));
    assert!(refusal(workspace.resolve("a/..")).contains("`..`"));
}

#[test]
fn clean_paths_are_normalized() {
    let (_temp, workspace, _) = setup();
    assert_eq!(workspace.resolve("./a/./b/").unwrap(), Path::new("a/b"));
    assert_eq!(workspace.resolve(".").unwrap(), Path::new("."));
    assert_eq!(workspace.resolve("a//b.txt").unwrap(), Path::new("a/b.txt"));
}

#[test]
fn links_leading_outside_are_refused_anywhere_along_the_path() {
    let (_temp, workspace, outside) = setup();
    let root = workspace.root();
    symlink("../outside", root.join("out_dir")).unwrap();
    symlink("../outside/secret.txt", root.join("out_file")).unwrap();
    symlink(&outside, root.join("absolute")).unwrap();
    symlink("../outside/not-there", root.join("dangling")).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    symlink("../out_dir", root.join("sub/chain")).unwrap();

    assert!(refusal(workspace.resolve("out_dir/secret.txt")).contains("outside the workspace"));
    assert!(refusal(workspace.resolve("out_dir")).contains("`out_dir`"));
    assert!(refusal(workspace.resolve("out_file")).contains("outside the workspace"));
    assert!(refusal(workspace.resolve("absolute/secret.txt")).contains("absolute target"));
    assert!(refusal(workspace.resolve("dangling")).contains("outside the workspace"));
    assert!(refusal(workspace.resolve("sub/chain/new.txt")).contains("`sub/chain`"));
}

#[test]
fn links_staying_inside_are_followed() {
    let (_temp, workspace, _) = setup();
    let root = workspace.root();
    std::fs::create_dir_all(root.join("real/deep")).unwrap();
    std::fs::write(root.join("real/deep/f.txt"), "x").unwrap();
    symlink("real", root.join("alias")).unwrap();
    symlink("../real/deep/f.txt", root.join("real/up")).unwrap();
    symlink("not-yet", root.join("later")).unwrap();

    assert_eq!(
        workspace.resolve("alias/deep/f.txt").unwrap(),
        Path::new("alias/deep/f.txt")
    );
    assert_eq!(workspace.resolve("alias/up").unwrap(), Path::new("alias/up"));
    assert_eq!(workspace.resolve("later").unwrap(), Path::new("later"));
    let text = workspace.dir().read_to_string("alias/up").unwrap();
    assert_eq!(text, "x");
}

#[test]
fn the_directory_handle_refuses_escapes_the_check_did_not_see() {
    // Checked first, swapped after: cap-std alone must still refuse.
    let (_temp, workspace, _) = setup();
    let relative = workspace.resolve("swapped/secret.txt").unwrap();
    symlink("../outside", workspace.root().join("swapped")).unwrap();
    let error = workspace.dir().read_to_string(&relative).unwrap_err();
    assert!(matches!(io_error("swapped/secret.txt", error), ToolError::Refused(_)));
}
