//! `[runtime]`: the threads the daemon's work runs on. One per processor
//! is right for a server of many requests, not for an assistant: each
//! thread keeps a stack and an allocator arena, so on a 64-core machine the
//! daemon would idle at several times its size for throughput it never
//! needs. The default follows the processors up to a small cap.

use serde::{Deserialize, Serialize};

use super::Problems;

/// The most worker threads the default gives, however many processors.
pub const DEFAULT_WORKER_THREADS_CAP: usize = 4;
/// The most a configuration may ask for.
pub const MAX_WORKER_THREADS: usize = 256;

/// `[runtime]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Threads running the daemon's tasks; 0 for one per processor, at
    /// most `DEFAULT_WORKER_THREADS_CAP`.
    pub worker_threads: usize,
}

impl RuntimeConfig {
    /// The worker threads to start on a machine with `processors`.
    pub fn worker_threads_on(&self, processors: usize) -> usize {
        match self.worker_threads {
            0 => processors.clamp(1, DEFAULT_WORKER_THREADS_CAP),
            set => set,
        }
    }

    /// The worker threads to start on this machine.
    pub fn worker_threads(&self) -> usize {
        self.worker_threads_on(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// Notes what is wrong with `[runtime]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(
            self.worker_threads <= MAX_WORKER_THREADS,
            format!("runtime.worker_threads must be at most {MAX_WORKER_THREADS}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_follows_the_processors_up_to_the_cap_and_a_setting_wins() {
        let default = RuntimeConfig::default();
        assert_eq!(default.worker_threads_on(1), 1);
        assert_eq!(default.worker_threads_on(2), 2);
        assert_eq!(default.worker_threads_on(64), DEFAULT_WORKER_THREADS_CAP);
        let set = RuntimeConfig { worker_threads: 12 };
        assert_eq!(set.worker_threads_on(2), 12);
    }

    #[test]
    fn too_many_threads_is_a_problem() {
        let mut problems = Problems::default();
        RuntimeConfig {
            worker_threads: MAX_WORKER_THREADS + 1,
        }
        .check(&mut problems);
        assert_eq!(problems.into_vec().len(), 1);
    }
}
