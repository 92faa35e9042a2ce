//! The documented systemd deployment (`deploy/`): the unit, the commands in
//! its README and the config file they install agree with each other; the
//! configuration laid out with the owners and modes the README prescribes
//! loads as the unit's unprivileged user (the real binary, in a child process
//! with that user's uid and gid); and a folder that user may not enter is
//! reported as "permission denied", not as a missing file.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::skip::{self, Need};

const UNIT: &str = include_str!("../deploy/passepartout.service");
const GUIDE: &str = include_str!("../deploy/README.md");
const SIGNAL_UNIT: &str = include_str!("../deploy/signal-cli.service");
const DEPLOY_CONFIG: &str = include_str!("../deploy/config.toml");

/// The uid and gid that stand for the unit's `passepartout` user and group:
/// unprivileged, and most likely nobody else's.
const SERVICE_ID: u32 = 61_937;

/// The values of `KEY=` lines in the unit's sections, in order.
fn unit_values(key: &str) -> Vec<&'static str> {
    UNIT.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

fn unit_value(key: &str) -> &'static str {
    match unit_values(key).as_slice() {
        [value] => value,
        values => panic!("the unit should set {key} once, not {values:?}"),
    }
}

/// The file given to `--config` on a command line.
fn config_argument(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    words.by_ref().find(|word| *word == "--config")?;
    words.next()
}

/// The README's commands that run the CLI with `--config`.
fn guide_cli_lines() -> Vec<&'static str> {
    GUIDE
        .lines()
        .map(str::trim)
        .filter(|line| line.contains("passepartout --config"))
        .collect()
}

/// One `sudo install …` line of the README's set-up: mode, owner, group and
/// where it installs.
#[derive(Debug)]
struct Install {
    mode: u32,
    owner: Option<String>,
    group: Option<String>,
    source: Option<String>,
    target: String,
}

/// The README's `sudo install` line whose target is `target`.
fn install_of(target: &str) -> Install {
    GUIDE
        .lines()
        .filter_map(|line| line.trim().strip_prefix("sudo install "))
        .map(|line| {
            let words: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
            let option = |name: &str| {
                let at = words.iter().position(|word| *word == name)?;
                Some(words[at + 1].to_string())
            };
            let operands: Vec<&str> = words
                .iter()
                .enumerate()
                .filter(|(at, word)| {
                    let argument = *at > 0 && ["-m", "-o", "-g"].contains(&words[at - 1]);
                    !word.starts_with('-') && !argument
                })
                .map(|(_, word)| *word)
                .collect();
            Install {
                mode: u32::from_str_radix(&option("-m").expect("every install line gives a mode"), 8).unwrap(),
                owner: option("-o"),
                group: option("-g"),
                source: (operands.len() > 1).then(|| operands[0].to_string()),
                target: operands.last().unwrap().to_string(),
            }
        })
        .find(|install| install.target == target)
        .unwrap_or_else(|| panic!("deploy/README.md installs nothing to {target}"))
}

/// The folder the unit's config file is in, and the file.
fn unit_config() -> (&'static str, &'static str) {
    let file = config_argument(unit_value("ExecStart")).expect("ExecStart gives --config");
    let folder = Path::new(file).parent().unwrap().to_str().unwrap();
    (folder, file)
}

#[test]
fn the_unit_leaves_out_memory_deny_write_execute_which_stops_java_and_node() {
    assert!(
        unit_values("MemoryDenyWriteExecute").is_empty(),
        "MemoryDenyWriteExecute stops every JIT (a spawned signal-cli's Java, Node)"
    );
}

#[test]
fn the_readme_cli_lines_use_the_unit_config_file_and_user() {
    let (_, file) = unit_config();
    assert_eq!(config_argument(unit_value("ExecStartPre")), Some(file));
    let user = unit_value("User");
    let lines = guide_cli_lines();
    assert!(
        lines.iter().any(|line| line.ends_with(" status")),
        "deploy/README.md shows how to run status: {lines:?}"
    );
    for line in lines {
        assert_eq!(config_argument(line), Some(file), "{line}");
        assert!(
            line.starts_with(&format!("sudo -u {user} passepartout --config ")),
            "the CLI runs as the unit's user, who alone may use the socket: {line}"
        );
    }
}

#[test]
fn the_data_dir_comes_from_the_config_file_the_cli_reads_too() {
    // In the unit's environment, the daemon would use a folder that the CLI,
    // reading only the file, does not know about.
    assert!(
        unit_values("Environment")
            .iter()
            .all(|value| !value.contains("PASSEPARTOUT_DATA_DIR")),
        "data_dir belongs in config.toml, where the CLI reads it too"
    );
    let (_, file) = unit_config();
    let install = install_of(file);
    assert_eq!(install.source.as_deref(), Some("deploy/config.toml"));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, DEPLOY_CONFIG).unwrap();
    let config = passepartout::gateways::load(Some(&path), Some(Default::default())).expect("deploy/config.toml loads");
    let state = PathBuf::from("/var/lib").join(unit_value("StateDirectory"));
    assert_eq!(config.data_dir(), state, "data_dir is the unit's StateDirectory");
}

#[test]
fn the_config_is_owned_by_root_and_readable_by_the_unit_group() {
    let (folder, file) = unit_config();
    let group = unit_value("Group");
    for (target, mode) in [(folder, 0o750), (file, 0o640)] {
        let install = install_of(target);
        assert_eq!(install.mode, mode, "{install:?}");
        assert_eq!(install.owner.as_deref(), Some("root"), "{install:?}");
        assert_eq!(install.group.as_deref(), Some(group), "{install:?}");
    }
}

/// Whether this process may run children as another user; says why not,
/// as `test` skipping.
fn can_switch_users(test: &str) -> bool {
    if !rustix::process::geteuid().is_root() {
        skip::skipped(
            test,
            Need::OtherUsers,
            "running a child as another user needs root, and this test runs as a user",
        );
        return false;
    }
    match Command::new("/bin/true").uid(SERVICE_ID).gid(SERVICE_ID).status() {
        Ok(status) if status.success() => true,
        outcome => {
            let why = format!("this machine cannot run a child as uid {SERVICE_ID}: {outcome:?}");
            skip::skipped(test, Need::OtherUsers, &why);
            false
        }
    }
}

/// The id an `install -o NAME` / `-g NAME` gives; without one, `sudo
/// install` leaves the file root's.
fn owner_id(name: Option<&str>) -> u32 {
    match name {
        None | Some("root") => 0,
        Some("passepartout") => SERVICE_ID,
        other => panic!("an owner or group the test does not know: {other:?}"),
    }
}

/// A temporary root that another user may enter, to lay files out in.
fn open_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    root
}

/// The binary, where the service user can run it: in place if every folder
/// above it lets others through, else a copy under `root`.
fn runnable_binary(root: &Path) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_passepartout"));
    let reachable = built
        .ancestors()
        .skip(1)
        .all(|folder| folder.metadata().is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if reachable {
        return built;
    }
    let copy = root.join("passepartout");
    std::fs::copy(&built, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// `passepartout --config FILE check-config`, as the unit's `ExecStartPre`
/// runs it, as the service user.
fn check_config_as_service(binary: &Path, file: &Path) -> Output {
    Command::new(binary)
        .arg("--config")
        .arg(file)
        .arg("check-config")
        .env_clear()
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .uid(SERVICE_ID)
        .gid(SERVICE_ID)
        .output()
        .expect("run passepartout as the service user")
}

/// Makes `path` (folder or file) with `mode`, `owner` and `group`.
fn lay_out(path: &Path, folder: bool, mode: u32, owner: u32, group: u32) {
    if folder {
        std::fs::create_dir(path).unwrap();
    } else {
        std::fs::write(path, DEPLOY_CONFIG).unwrap();
    }
    std::os::unix::fs::chown(path, Some(owner), Some(group)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_config_laid_out_as_documented_loads_as_the_service_user() {
    if !can_switch_users("the_config_laid_out_as_documented_loads_as_the_service_user") {
        return;
    }
    let (folder, file) = unit_config();
    let root = open_root();
    let binary = runnable_binary(root.path());
    let etc = root.path().join("etc");
    lay_out(&etc, true, 0o755, 0, 0);

    let folder_install = install_of(folder);
    let file_install = install_of(file);
    let config_folder = etc.join("passepartout");
    let config_file = config_folder.join("config.toml");
    lay_out(
        &config_folder,
        true,
        folder_install.mode,
        owner_id(folder_install.owner.as_deref()),
        owner_id(folder_install.group.as_deref()),
    );
    lay_out(
        &config_file,
        false,
        file_install.mode,
        owner_id(file_install.owner.as_deref()),
        owner_id(file_install.group.as_deref()),
    );

    let output = check_config_as_service(&binary, &config_file);
    assert!(
        output.status.success(),
        "check-config as the service user: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("ok: "));
}

#[test]
fn a_folder_the_user_may_not_enter_is_permission_denied_not_missing() {
    let root = open_root();
    let folder = root.path().join("passepartout");
    let file = folder.join("config.toml");
    let output = if rustix::process::geteuid().is_root() {
        if !can_switch_users("a_folder_the_user_may_not_enter_is_permission_denied_not_missing") {
            return;
        }
        // What the README used to prescribe: root's, 0750, with a
        // service that runs as another user.
        lay_out(&folder, true, 0o750, 0, 0);
        lay_out(&file, false, 0o640, 0, 0);
        check_config_as_service(&runnable_binary(root.path()), &file)
    } else {
        lay_out(
            &folder,
            true,
            0o700,
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
        lay_out(
            &file,
            false,
            0o600,
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o000)).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_passepartout"))
            .arg("--config")
            .arg(&file)
            .arg("check-config")
            .env_clear()
            .output()
            .unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
        output
    };
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("permission denied"), "{error}");
    assert!(error.contains(&file.display().to_string()), "{error}");
    assert!(!error.contains("does not exist"), "{error}");
}

#[test]
fn the_units_verify_with_systemd_analyze() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        skip::skipped(
            "the_units_verify_with_systemd_analyze",
            Need::SystemdAnalyze,
            "systemd-analyze is not installed here",
        );
        return;
    };
    assert!(version.status.success());
    let dir = tempfile::tempdir().unwrap();
    // The programs the units run, as they would be installed: this build,
    // and a stand-in for signal-cli.
    let units = [
        (
            "passepartout.service",
            UNIT.replace("/usr/local/bin/passepartout", env!("CARGO_BIN_EXE_passepartout")),
        ),
        (
            "signal-cli.service",
            SIGNAL_UNIT.replace("/opt/signal-cli/bin/signal-cli", "/bin/true"),
        ),
    ];
    for (name, text) in units {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let output = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&path)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {said}");
        assert!(!said.contains(name), "{name} has warnings: {said}");
    }
}

#[test]
fn the_daemon_unit_waits_for_readiness_and_runs_a_watchdog() {
    assert_eq!(unit_value("Type"), "notify");
    assert_eq!(unit_value("NotifyAccess"), "main");
    assert_eq!(unit_value("WatchdogSec"), "30");
    assert!(
        SIGNAL_UNIT.contains("--receive-mode=manual"),
        "nothing is received while passepartout is not subscribed"
    );
}
