//! Where `chat` logs: a file in the data directory, not the terminal, so
//! the daemon a chat starts in its own process never writes over the
//! conversation.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The log file's name in the data directory.
const FILE: &str = "chat.log";

/// Sends this process's log to `<data_dir>/chat.log` (appended), at `info`
/// unless `RUST_LOG` says otherwise; returns the file's path.
pub(super) fn init(data_dir: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(data_dir)?;
    let path = data_dir.join(FILE);
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .init();
    Ok(path)
}
