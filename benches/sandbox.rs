//! What confinement adds to starting a tool's process: `/bin/true` run to its
//! end as the shell tool runs a command (its own process group, a cleared
//! environment, output piped), three ways, in turn:
//!
//! - `plain`: no sandbox at all;
//! - `limits`: the default resource limits and `no_new_privs` only (what a
//!   kernel without Landlock gets), with the process's own `TMPDIR`;
//! - `confined`: the default `[tools.sandbox]` ruleset as well, shaped as
//!   the daemon shapes it (the workspace writable; the data directory, the
//!   configuration's folder and signal-cli's data protected), built in the
//!   parent for each process and applied in the child before `exec`.
//!
//! Each sample is one process from its confinement's preparation to its
//! reaping, so the ruleset's construction and the temporary directory's
//! creation and removal count. The rounds interleave the three ways so a
//! shared machine's noise falls on all of them alike.
//!
//! `cargo bench --bench sandbox` prints one JSON line: per way, the median
//! and the 99th percentile in microseconds, and the median cost over `plain`.
//! `PP_BENCH_SPAWNS` (default 500) sets how many processes each way starts.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use passepartout::config::Config;
use passepartout::safety::sandbox::{Policy, Support};

const PROGRAM: &str = "/bin/true";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The command as the shell tool builds it, in `workspace`.
fn command(workspace: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(PROGRAM);
    command
        .current_dir(workspace)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// Starts one process under `policy` (none: plain) and waits for its end.
async fn spawn_once(workspace: &Path, policy: Option<&Policy>) -> Duration {
    let started = Instant::now();
    let mut confinement = policy.map(|policy| policy.prepare().expect("the sandbox prepares"));
    let mut command = command(workspace);
    if let Some(confinement) = confinement.as_mut() {
        confinement.apply(&mut command);
    }
    let status = command
        .spawn()
        .expect("the program starts")
        .wait()
        .await
        .expect("the program is reaped");
    assert!(status.success(), "{PROGRAM} failed: {status}");
    drop(confinement);
    started.elapsed()
}

/// The median and 99th percentile of `samples`, in microseconds.
fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

fn main() {
    let spawns = env_number("PP_BENCH_SPAWNS", 500).max(10);
    let home = tempfile::tempdir().expect("a folder for the data and the configuration");
    let config = Config {
        data_dir: home.path().join("data"),
        ..Config::default()
    };
    let config_file = home.path().join("config").join("config.toml");
    let workspace = config.workspace();
    std::fs::create_dir_all(&workspace).expect("workspace");
    let support = Support::probe();
    let secrets = passepartout::gateways::secret_places(&config, &[]);
    let limits_only = Policy::for_tools(&config, &secrets, Some(&config_file), Support::pretend(0));
    let confined = Policy::for_tools(&config, &secrets, Some(&config_file), support);
    let ways: [(&str, Option<&Policy>); 3] = [
        ("plain", None),
        ("limits", Some(&limits_only)),
        ("confined", Some(&confined)),
    ];

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(spawns); ways.len()];
    runtime.block_on(async {
        for _ in 0..spawns / 10 {
            for (_, policy) in &ways {
                spawn_once(&workspace, *policy).await;
            }
        }
        for _ in 0..spawns {
            for ((_, policy), timed) in ways.iter().zip(samples.iter_mut()) {
                timed.push(spawn_once(&workspace, *policy).await);
            }
        }
    });

    let figures: Vec<(f64, f64)> = samples.into_iter().map(percentiles).collect();
    let plain = figures[0].0;
    let ways_json: Vec<String> = ways
        .iter()
        .zip(&figures)
        .map(|((name, _), (median, p99))| {
            format!(
                r#""{name}":{{"median_us":{median:.0},"p99_us":{p99:.0},"added_us":{:.0}}}"#,
                median - plain
            )
        })
        .collect();
    println!(
        r#"{{"bench":"sandbox","program":"{PROGRAM}","spawns":{spawns},"landlock_abi":{},"cores":{},{}}}"#,
        support.abi(),
        std::thread::available_parallelism().map_or(1, usize::from),
        ways_json.join(",")
    );
}
