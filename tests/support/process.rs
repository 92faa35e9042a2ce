//! Runs the real `passepartout` binary as a child process.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::harness::WAIT;

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_passepartout")
}

/// Writes a config file for a daemon in `dir` using the model at `llm_url`.
pub fn write_config(dir: &Path, llm_url: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "data_dir = {data:?}\n\
         [store]\nbackup_every_s = 0\n\
         [pipeline]\nshutdown_grace_s = 5\n\
         [[llm.providers]]\nname = \"fake\"\nbase_url = {llm_url:?}\nmodel = \"fake-model\"\ntimeout_s = 10\n",
        data = dir.join("data").display().to_string(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// [`write_config`], with the shell tool held for a person's approval.
pub fn write_config_asking_for_shell(dir: &Path, llm_url: &str) -> PathBuf {
    let path = write_config(dir, llm_url);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text += "[tools]\nrequire_approval = [\"shell\"]\n";
    std::fs::write(&path, text).unwrap();
    path
}

/// The socket path a config written by [`write_config`] uses.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join("data").join("passepartout.sock")
}

/// A daemon child process, ready to take connections.
pub struct Running {
    pub child: Child,
    /// Every line the daemon logged so far.
    pub logs: Arc<Mutex<Vec<String>>>,
    /// Notified at each line logged.
    logged: Arc<tokio::sync::Notify>,
    /// The task reading its stderr into `logs`; done once the pipe closed.
    reader: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Starts `passepartout run` and waits until it logs that it is ready.
    pub async fn start(config: &Path) -> Running {
        Self::start_with(config, &[("RUST_LOG", "info")]).await
    }

    /// Like [`Running::start`], with extra environment variables.
    pub async fn start_with(config: &Path, env: &[(&str, &str)]) -> Running {
        let mut command = Command::new(binary());
        command
            .args(["--config", config.to_str().unwrap(), "run"])
            .env("RUST_LOG", "info")
            .envs(env.iter().copied());
        Self::start_command(command).await
    }

    /// Like [`Running::start`], started with a soft limit of `open_files`
    /// open files (the hard limit left as it is).
    pub async fn start_with_open_files(config: &Path, open_files: u64) -> Running {
        let mut command = Command::new("/bin/sh");
        command
            .args(["-c", r#"ulimit -S -n "$0" && exec "$@""#])
            .arg(open_files.to_string())
            .args([binary(), "--config", config.to_str().unwrap(), "run"])
            .env("RUST_LOG", "info");
        Self::start_command(command).await
    }

    /// Starts `command` (a daemon's `run`) and waits until it logs that it
    /// is ready.
    async fn start_command(mut command: Command) -> Running {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the daemon");
        let stderr = child.stderr.take().unwrap();
        let (ready_tx, ready) = oneshot::channel();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let kept = logs.clone();
        let logged = Arc::new(tokio::sync::Notify::new());
        let notify = logged.clone();
        let reader = tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            let mut lines = BufReader::new(stderr).lines();
            // Keep draining so the child never blocks on a full pipe.
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line.clone());
                notify.notify_waiters();
                if line.contains("passepartout ready")
                    && let Some(tx) = ready_tx.take()
                {
                    let _ = tx.send(());
                }
                if line.contains("ERROR") || line.contains("panicked") {
                    eprintln!("daemon: {line}");
                }
            }
        });
        let ready = tokio::time::timeout(WAIT, ready).await;
        if !matches!(ready, Ok(Ok(()))) {
            let exited = child.try_wait().ok().flatten();
            let logged = logs.lock().unwrap().join("\n");
            panic!("the daemon was not ready within {WAIT:?} (exited: {exited:?}); it logged:\n{logged}");
        }
        Running {
            child,
            logs,
            logged,
            reader,
        }
    }

    /// Waits until the daemon has logged a line holding every one of `words`.
    pub async fn wait_for_log(&self, words: &[&str]) -> String {
        let found = super::fake_llm::wait_on(&self.logged, WAIT, || {
            let logs = self.logs.lock().unwrap();
            logs.iter()
                .find(|line| words.iter().all(|word| line.contains(word)))
                .cloned()
        })
        .await;
        found.unwrap_or_else(|| {
            let logged = self.logs.lock().unwrap().join("\n");
            panic!("the daemon did not log {words:?} within {WAIT:?}; it logged:\n{logged}")
        })
    }

    /// SIGKILL, and wait for the process to be gone.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill");
    }

    /// SIGTERM, and the exit status, once every line the daemon wrote
    /// before it exited is in `logs`.
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("still running") as i32;
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::TERM,
        )
        .expect("send SIGTERM");
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .expect("wait");
        // The pipe is closed now; what is left in it is the last lines.
        tokio::time::timeout(WAIT, self.reader)
            .await
            .expect("the daemon's log is read to its end")
            .expect("the log reader did not panic");
        status
    }
}

/// Runs a client command of the binary to completion.
pub async fn run_cli(config: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new(binary())
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        // A command that does not finish in time is not left running.
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT, output)
        .await
        .expect("command finishes")
        .expect("command runs")
}

/// The processes on this machine whose command line (its words joined by
/// spaces) contains `needle`.
pub fn processes_running(needle: &str) -> Vec<rustix::process::Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).replace('\0', " ").contains(needle))
        })
        .filter_map(rustix::process::Pid::from_raw)
        .collect()
}
