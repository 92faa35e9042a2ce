//! `passepartout restore [BACKUP]`: rebuild the store from a verified backup
//! (the newest, unless one is named), and the folders copied beside it (a
//! gateway's keys: Matrix's `matrix/`). What was there is kept beside it,
//! renamed, never deleted. Refuses while a daemon holds the data directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::Config;
use crate::foundation::data_dir::{DataDirError, DataDirLock};
use crate::store::{beside_backup, list_backups, restore_backup};

pub async fn run(config: &Config, backup: Option<PathBuf>) -> ExitCode {
    // Held for the whole restore: no daemon can start on a half-restored store.
    let _lock = match DataDirLock::acquire(&config.data_dir()) {
        Ok(lock) => lock,
        Err(DataDirError::InUse { .. }) => {
            eprintln!("passepartout: a daemon is running on this data directory; stop it before restoring");
            return ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::FAILURE;
        }
    };
    let backup = match backup {
        Some(path) => path,
        None => match list_backups(&config.backup_dir()).map(|mut all| all.pop()) {
            Ok(Some(newest)) => newest,
            Ok(None) => {
                eprintln!("passepartout: no backups in {}", config.backup_dir().display());
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("passepartout: {error}");
                return ExitCode::FAILURE;
            }
        },
    };
    let store = config.store_dir();
    let mut kept = None;
    if store.exists() {
        let aside = store.with_file_name(format!(
            "store.before-restore-{}",
            crate::foundation::clock::Clock::start().now_ms()
        ));
        if let Err(error) = std::fs::rename(&store, &aside) {
            eprintln!("passepartout: cannot move {} aside: {error}", store.display());
            return ExitCode::FAILURE;
        }
        kept = Some(aside);
    }
    match restore_backup(&backup, &store) {
        Ok(entries) => {
            println!(
                "restored {entries} records from {} into {}",
                backup.display(),
                store.display()
            );
            if let Some(aside) = kept {
                println!("the previous store is kept at {}", aside.display());
            }
            match put_back_beside(&backup, &config.data_dir()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("passepartout: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => {
            eprintln!("passepartout: restore failed: {error}");
            if let Some(aside) = kept {
                let _ = std::fs::remove_dir_all(&store);
                match std::fs::rename(&aside, &store) {
                    Ok(()) => eprintln!("the previous store was put back"),
                    Err(error) => eprintln!("the previous store is at {}: {error}", aside.display()),
                }
            }
            ExitCode::FAILURE
        }
    }
}

/// Puts each folder copied beside `backup` back into `data_dir`, what was
/// there set aside first.
fn put_back_beside(backup: &Path, data_dir: &Path) -> Result<(), String> {
    let copied = beside_backup(backup).map_err(|error| format!("cannot list what the backup holds beside: {error}"))?;
    for (name, copy) in copied {
        // Copied whole under another name first: a copy that fails halfway
        // is never what the daemon opens, and what was there stays.
        let restoring = data_dir.join(format!("{name}.restoring"));
        let _ = std::fs::remove_dir_all(&restoring);
        copy_folder(&copy, &restoring).map_err(|error| {
            let _ = std::fs::remove_dir_all(&restoring);
            format!("cannot restore {name}/ from {}: {error}", copy.display())
        })?;
        let place = data_dir.join(&name);
        if place.exists() {
            let aside = data_dir.join(format!(
                "{name}.before-restore-{}",
                crate::foundation::clock::Clock::start().now_ms()
            ));
            std::fs::rename(&place, &aside)
                .map_err(|error| format!("cannot move {} aside: {error}", place.display()))?;
            println!("the previous {name}/ is kept at {}", aside.display());
        }
        std::fs::rename(&restoring, &place).map_err(|error| format!("cannot put {name}/ in place: {error}"))?;
        println!("restored {name}/ from {}", copy.display());
    }
    Ok(())
}

/// Copies the folder `from` to `to`, which must not exist, modes kept.
fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_folder(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
