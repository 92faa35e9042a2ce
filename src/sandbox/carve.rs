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
/// purpose and is kept.
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
        let path = entry.path();
        if !protected.iter().any(|p| path.starts_with(p)) {
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
        let root = dir.path();
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
    fn unrelated_folders_and_ones_inside_are_kept() {
        let protected = [PathBuf::from("/var/lib/app")];
        assert_eq!(carve(Path::new("/usr"), &protected), vec![PathBuf::from("/usr")]);
        let inside = PathBuf::from("/var/lib/app/workspace");
        assert_eq!(carve(&inside, &protected), vec![inside.clone()], "granted on purpose");
    }
}
