//! What of a program's installation a confined server may read: the
//! program's own folder, widened to the installation around it when the
//! program is part of one, so that what it loads beside itself is readable
//! too.
//!
//! - a Node package's file: the outermost `node_modules` folder holding it
//!   (`npm install` into a folder, `npm install -g --prefix`, npx's cache),
//!   where Node looks for its dependencies; outside a `node_modules` tree,
//!   a script's package (the nearest folder with a `package.json`);
//! - a Python virtual environment's file: the environment (its
//!   `pyvenv.cfg`), wherever the script was linked from (`uv tool`, `pipx`);
//! - a program in a `bin` folder: the installation around it (a Python or
//!   Node installation, a folder under `/opt`, `/usr` or `/nix`).
//!
//! Never `/`, the home folder, a folder above it, or `~/.local` (which
//! holds other programs' data, signal-cli's keys among them): a program
//! directly in the home folder gets itself alone, `~/bin/tool` gets
//! `~/bin`.

use std::path::{Path, PathBuf};

/// What to grant for reading so that `program` (a canonical path: links
/// followed) runs with what it loads beside it.
pub fn reach(program: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let home = home.as_deref();
    let found = node_modules(program)
        .or_else(|| package(program, home))
        .or_else(|| environment(program, home))
        .or_else(|| program.parent().and_then(|dir| installation(dir, home)))
        .or_else(|| program.parent())
        .filter(|root| !too_wide(root, home));
    found.unwrap_or(program).to_path_buf()
}

/// Whether granting `root` would reach the home folder or other programs'
/// data: `/`, the home folder, a folder above it, `~/.local`.
fn too_wide(root: &Path, home: Option<&Path>) -> bool {
    root.parent().is_none() || home.is_some_and(|home| home.starts_with(root) || root == home.join(".local"))
}

/// The outermost `node_modules` folder `program` is in: every package Node
/// may load for it is there (hoisted, or nested below it).
fn node_modules(program: &Path) -> Option<&Path> {
    program
        .ancestors()
        .skip(1)
        .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
        .last()
}

/// The package a JavaScript file outside any `node_modules` tree belongs
/// to (a checkout with its dependencies installed beside it): the nearest
/// folder holding a `package.json`, below the home folder's level.
fn package<'a>(program: &'a Path, home: Option<&Path>) -> Option<&'a Path> {
    let script = program
        .extension()
        .is_some_and(|ext| ["js", "mjs", "cjs"].iter().any(|js| ext == *js));
    if !script {
        return None;
    }
    program
        .ancestors()
        .skip(1)
        .take_while(|dir| !too_wide(dir, home))
        .find(|dir| dir.join("package.json").is_file())
}

/// The Python virtual environment `program` is in (the nearest folder
/// holding a `pyvenv.cfg`), below the home folder's level.
fn environment<'a>(program: &'a Path, home: Option<&Path>) -> Option<&'a Path> {
    program
        .ancestors()
        .skip(1)
        .take_while(|dir| !too_wide(dir, home))
        .find(|dir| dir.join("pyvenv.cfg").is_file())
}

/// The installation around a program's folder `dir` when `dir` is its
/// `bin`: a virtual environment, a Node or Python installation, a folder
/// under `/opt`, `/usr` or `/nix`.
fn installation<'a>(dir: &'a Path, home: Option<&Path>) -> Option<&'a Path> {
    let root = dir
        .parent()
        .filter(|_| dir.file_name().is_some_and(|name| name == "bin"))?;
    if too_wide(root, home) {
        return None;
    }
    let system = ["/opt", "/usr", "/nix"].iter().any(|top| root.starts_with(top));
    let python = || {
        std::fs::read_dir(root.join("lib")).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        })
    };
    let marked = ["pyvenv.cfg", "conda-meta", "lib/node_modules"]
        .iter()
        .any(|marker| root.join(marker).exists());
    (system || marked || python()).then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> PathBuf {
        PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
    }

    /// A folder with `files` (made, with their folders) under it.
    fn tree(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for file in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        (dir, root)
    }

    #[test]
    fn an_installation_is_never_the_home_folder_or_the_root() {
        let home = home();
        for dir in [home.join("bin"), home.join(".local/bin"), PathBuf::from("/bin")] {
            assert_eq!(installation(&dir, Some(&home)), None, "{}", dir.display());
        }
        assert_eq!(reach(&home.join("server.py")), home.join("server.py"), "itself alone");
        assert_eq!(reach(Path::new("/server")), PathBuf::from("/server"));
        assert_eq!(reach(&home.join("bin/tool")), home.join("bin"));
        assert_eq!(reach(&home.join(".local/bin/tool")), home.join(".local/bin"));
        assert_eq!(reach(Path::new("/opt/tool/bin/x")), PathBuf::from("/opt/tool"));
        assert_eq!(
            reach(Path::new("/opt/tool/libexec/x")),
            PathBuf::from("/opt/tool/libexec")
        );
    }

    #[test]
    fn a_bin_folder_is_widened_only_to_a_marked_installation() {
        let (_dir, root) = tree(&["venv/bin/tool", "plain/bin/tool"]);
        assert_eq!(reach(&root.join("plain/bin/tool")), root.join("plain/bin"), "unmarked");
        std::fs::write(root.join("venv/pyvenv.cfg"), "").unwrap();
        assert_eq!(reach(&root.join("venv/bin/tool")), root.join("venv"));
    }

    #[test]
    fn a_node_package_reaches_the_outermost_node_modules_folder() {
        let (_dir, root) = tree(&[
            "project/package.json",
            "project/node_modules/@scope/server/package.json",
            "project/node_modules/@scope/server/dist/index.js",
            "project/node_modules/a/node_modules/b/cli.js",
            "prefix/lib/node_modules/@scope/server/dist/index.js",
        ]);
        let modules = root.join("project/node_modules");
        assert_eq!(reach(&modules.join("@scope/server/dist/index.js")), modules);
        assert_eq!(reach(&modules.join("a/node_modules/b/cli.js")), modules, "nested");
        assert_eq!(
            reach(&root.join("prefix/lib/node_modules/@scope/server/dist/index.js")),
            root.join("prefix/lib/node_modules"),
            "installed with --prefix"
        );
    }

    #[test]
    fn a_script_outside_node_modules_reaches_its_package_and_a_venvs_its_environment() {
        let (_dir, root) = tree(&[
            "checkout/package.json",
            "checkout/dist/server.mjs",
            "venvs/time/pyvenv.cfg",
            "venvs/time/bin/mcp-server-time",
            "venvs/time/lib/python3.12/site-packages/time/server.py",
            "beside/server.py",
        ]);
        assert_eq!(reach(&root.join("checkout/dist/server.mjs")), root.join("checkout"));
        let venv = root.join("venvs/time");
        assert_eq!(reach(&venv.join("bin/mcp-server-time")), venv);
        assert_eq!(reach(&venv.join("lib/python3.12/site-packages/time/server.py")), venv);
        assert_eq!(reach(&root.join("beside/server.py")), root.join("beside"));
    }
}
