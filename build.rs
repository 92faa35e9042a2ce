//! Records the git commit the binary is built from, for `--version`:
//! `BUILT_VERSION` is `0.1.0 (commit 1a2b3c4d5e6f)`, or the bare
//! version outside a git checkout (a source tarball, `cargo install` from a
//! registry). Runs again only when the checkout's current commit changes.
//!
//! On Linux with glibc it also packs the binary's relative relocations
//! (`-z pack-relative-relocs`, read by glibc 2.36 and later): the table the
//! loader walks at every start shrinks from 1.4 MB to a few kilobytes, and
//! with it the installed file and what a start maps in. A small program
//! is linked and run that way first, with the linker and flags this build
//! uses, so a linker or a C library that cannot do it gets the plain binary
//! instead. The probe's answer is kept until the commit or this file
//! changes. A binary built for an older glibc than the building machine's
//! (built here, copied to an older system) needs `PP_PACK_RELOCATIONS=0`.

use std::path::PathBuf;
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
    println!("cargo:rerun-if-env-changed=PP_PACK_RELOCATIONS");
    if std::env::var("PP_PACK_RELOCATIONS").as_deref() != Ok("0") && packs_relative_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// Whether a program linked with packed relative relocations builds and,
/// where it can be tried (built for this machine), runs.
fn packs_relative_relocations() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return false;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr_probe.rs");
    let program = out.join("relr_probe");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut rustc = Command::new(var("RUSTC"));
    rustc
        .args(["--edition=2024", "--crate-type=bin", "--target", &var("TARGET")])
        .args(
            var("CARGO_ENCODED_RUSTFLAGS")
                .split('\x1f')
                .filter(|flag| !flag.is_empty()),
        )
        .args(["-C", "link-arg=-Wl,-z,pack-relative-relocs", "-o"])
        .args([&program, &source]);
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        rustc.arg(format!("-Clinker={linker}"));
    }
    if !rustc.output().is_ok_and(|output| output.status.success()) {
        return false;
    }
    var("HOST") != var("TARGET") || Command::new(&program).status().is_ok_and(|status| status.success())
}
