//! Granting a folder without what must stay out of reach beneath it.
//!
//! Landlock only grants: a rule on `/etc` reaches everything under it. When a
//! folder to grant holds a protected one (the configuration's directory
//! under `/etc`, the data directory under a folder in `allow_read`), the
//! grant is replaced by grants on its entries, leaving out the branch that
//! leads to the protected folder, and so on down that branch.

use std::path::{Path, PathBuf};

/// The paths to grant instead of `root` so that nothing in `protected` below
/// it is reached; `root` itself when it holds none of them. A root inside a
/// protected folder (the workspace in the data directory) was granted on
/// purpose and is kept. `root` and `protected` are canonical paths.
pub fn carve(root: &Path, protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut granted = Vec::new();
    carve_into(root, protected, &mut granted);
    granted
}

fn carve_into(root: &Path, protected: &[PathBuf], granted: &mut Vec<PathBuf>) {
    if !protected.iter().any(|p| p.starts_with(root) && p != root) {
        granted.push(root.to_path_buf());
        return;
    }
    // A folder that cannot be listed is left out: granting less is safe.
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        // Landlock grants what a link leads to, so the target is what is
        // judged: a link into a protected folder is left out, one to a
        // folder holding one is carved in turn, one back up the tree (a
        // loop) is left out. One that leads nowhere is left out too.
        let Ok(path) = entry.path().canonicalize() else {
            continue;
        };
        if !protected.iter().any(|p| path.starts_with(p)) && !root.starts_with(&path) {
            carve_into(&path, protected, granted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_holding_a_protected_one_is_granted_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = &dir.path().canonicalize().unwrap();
        for sub in ["etc/ssl", "etc/app/secrets", "etc/app/other"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/hosts"), "").unwrap();
        let mut granted = carve(&root.join("etc"), &[root.join("etc/app/secrets")]);
        granted.sort();
        assert_eq!(
            granted,
            vec![root.join("etc/app/other"), root.join("etc/hosts"), root.join("etc/ssl")]
        );
    }

    #[test]
    fn links_are_judged_by_where_they_lead() {
        let dir = tempfile::tempdir().unwrap();
        let root = &dir.path().canonicalize().unwrap();
        for sub in ["etc/app/secrets", "etc/app/other", "elsewhere"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let link = |target: &str, name: &str| std::os::unix::fs::symlink(root.join(target), root.join(name)).unwrap();
        link("etc/app/secrets", "etc/straight-in");
        link("etc/app", "etc/around");
        link("etc", "etc/loop");
        link("elsewhere", "etc/out");
        link("missing", "etc/dangling");
        let granted: std::collections::BTreeSet<PathBuf> = carve(&root.join("etc"), &[root.join("etc/app/secrets")])
            .into_iter()
            .collect();
        assert_eq!(
            granted,
            [root.join("etc/app/other"), root.join("elsewhere")]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn unrelated_folders_and_ones_inside_are_kept() {
        let protected = [PathBuf::from("/var/lib/app")];
        assert_eq!(carve(Path::new("/usr"), &protected), vec![PathBuf::from("/usr")]);
        let inside = PathBuf::from("/var/lib/app/workspace");
        assert_eq!(carve(&inside, &protected), vec![inside.clone()], "granted on purpose");
    }
}
