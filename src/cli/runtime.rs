//! The async runtime a command runs on, its worker threads as `[runtime]`
//! says (see `config/runtime.rs` for why they are capped).

use std::process::ExitCode;

use tokio::runtime::Runtime;

use crate::config::RuntimeConfig;

/// A multi-threaded runtime with `settings`' worker threads; the failure
/// said on stderr, as the exit code to end with.
pub fn build(settings: &RuntimeConfig) -> Result<Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.worker_threads())
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("passepartout: cannot start the async runtime: {error}");
            ExitCode::FAILURE
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_has_the_worker_threads_the_settings_give() {
        let three = build(&RuntimeConfig { worker_threads: 3 }).unwrap();
        assert_eq!(three.metrics().num_workers(), 3);
        let default = build(&RuntimeConfig::default()).unwrap();
        assert_eq!(
            default.metrics().num_workers(),
            RuntimeConfig::default().worker_threads()
        );
        assert!(default.metrics().num_workers() <= crate::config::DEFAULT_WORKER_THREADS_CAP);
    }
}
