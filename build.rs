//! Records the git commit the binary is built from, for `--version`:
//! `BUILT_VERSION` is `0.1.0 (commit 1a2b3c4d5e6f)`, or the bare
//! version outside a git checkout (a source tarball, `cargo install` from a
//! registry). Runs again only when the checkout's current commit changes.

use std::process::Command;

/// The trimmed output of `git ARGS`, if git ran and succeeded.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let shown = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) if !commit.is_empty() => format!("{version} (commit {commit})"),
        _ => version,
    };
    println!("cargo:rustc-env=BUILT_VERSION={shown}");
    // HEAD, the branch it names, and the packed refs: what moves on a commit
    // or a checkout (in a worktree too, where they live in different places).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // Only files that exist: cargo counts a missing one as changed, and
        // would run this script, and rebuild the crate, every time.
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
