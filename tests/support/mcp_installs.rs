//! The reference servers installed in each of the usual ways, for the
//! tests that start them confined: `npm install` into a folder and the
//! Python virtual environment are `.ci/install-mcp-servers`' own; the rest
//! are made here once, into a folder kept under the target directory and
//! reused by later runs: `npm install -g --prefix`, a virtual
//! environment's script linked from a `bin` elsewhere (as `uv tool` and
//! `pipx` install), and a plain script beside the module it imports.
//! `npx -y` needs no install: the server fetches it into its own home.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::mcp::{NPM_VERSION, TIME_VERSION, tools_dir};

/// The server-everything package, as npm names it at its pinned version.
pub fn everything_package() -> String {
    format!("@modelcontextprotocol/server-everything@{NPM_VERSION}")
}

/// `npm install` into a folder: the program in its `node_modules/.bin`.
pub fn npm_folder() -> PathBuf {
    tools_dir().join(format!("mcp-npm-{NPM_VERSION}/node_modules/.bin/mcp-server-everything"))
}

/// A Python virtual environment's own script.
pub fn venv() -> PathBuf {
    tools_dir().join(format!("mcp-server-time-{TIME_VERSION}/bin/mcp-server-time"))
}

/// `npm install -g --prefix`: the program in the prefix's `bin`.
pub fn npm_global() -> PathBuf {
    installs().join("global/bin/mcp-server-everything")
}

/// A virtual environment's script linked from a `bin` elsewhere.
pub fn linked() -> PathBuf {
    installs().join("linked/bin/mcp-server-time")
}

/// A plain script (`#!/usr/bin/env python3`) importing the fixture server
/// beside it.
pub fn plain() -> PathBuf {
    installs().join("plain/server.py")
}

/// The folder the layouts made here are in, made once per test binary.
fn installs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-installs-{NPM_VERSION}-{TIME_VERSION}"));
        std::fs::create_dir_all(&dir).unwrap();
        global(&dir.join("global"));
        let bin = dir.join("linked/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let link = bin.join("mcp-server-time");
        if std::fs::read_link(&link).ok() != Some(venv()) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(venv(), &link).unwrap();
        }
        let plain = dir.join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_fixture.py");
        std::fs::copy(fixture, plain.join("fixture.py")).unwrap();
        let script = plain.join("server.py");
        std::fs::write(&script, "#!/usr/bin/env python3\nimport fixture\n\nfixture.main()\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    })
}

/// server-everything installed with `npm install -g --prefix` into
/// `prefix`, unless it is there: beside it first, then renamed, so a
/// broken install is never taken for one.
fn global(prefix: &Path) {
    if prefix.exists() {
        return;
    }
    let partial = prefix.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    let output = Command::new("npm")
        .args(["install", "-g", "--prefix"])
        .arg(&partial)
        .args(["--no-audit", "--no-fund", "--prefer-offline", &everything_package()])
        .output()
        .expect("run npm");
    assert!(
        output.status.success(),
        "npm install -g --prefix failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::rename(&partial, prefix).unwrap();
}
