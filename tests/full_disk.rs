//! Full-disk test: the real binary with its data directory on a tmpfs of
//! 4 MiB, filled up while it works. Every message it accepted must survive
//! and be answered exactly once after space returns and it restarts; while
//! the disk is full it must acknowledge nothing more, say why in its status
//! and in `doctor`, and exit non-zero.
//!
//! Why a tmpfs: it is the only way to get a real ENOSPC out of the real
//! store without touching the machine's disks, and its size is exact. It
//! needs root (or CAP_SYS_ADMIN) to mount, as CI has; elsewhere the test
//! says so and skips. A filler file takes whatever the daemon has not
//! written yet, so writes fail after a few messages instead of after
//! thousands.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ServerFrame};
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::harness::WAIT;
use support::process::{Running, run_cli, socket_path};
use support::skip::Need;

/// Messages tried while the disk fills; writes fail long before the last.
const ATTEMPTS: usize = 500;
/// The first message: its turn hangs at the model, so the failing daemon is
/// still draining (and answering status) when the test looks at it.
const HELD: &str = "held";

/// A tmpfs mounted for the test's life; unmounted on drop, even when the
/// test fails, so no mount is left behind.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` at `dir`, or says why it cannot.
    fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed (needs root or CAP_SYS_ADMIN): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.0).status();
        if !unmounted.is_ok_and(|status| status.success()) {
            // Busy (a daemon still dying): detach it now, it goes when free.
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn write_config(dir: &Path, llm_url: &str) -> PathBuf {
    let path = dir.join("config.toml");
    // A long grace: the failing daemon waits for the held turn, which ends
    // when the test shuts the model down, not when a timer runs out.
    let text = format!(
        "data_dir = {data:?}\n\
         [store]\nbackup_every_s = 0\n\
         [pipeline]\nshutdown_grace_s = 60\n\
         [[llm.providers]]\nname = \"fake\"\nbase_url = {llm_url:?}\nmodel = \"fake-model\"\ntimeout_s = 60\n",
        data = dir.join("data").display().to_string(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes zeros into `path` until the file system is full.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) if error.raw_os_error() == Some(28) => break, // ENOSPC
            Err(error) => panic!("filling the tmpfs: {error}"),
        }
    }
    // Whatever is left of a page is taken with smaller writes.
    while let Ok(n) = file.write(&[0u8; 512])
        && n > 0
    {}
}

/// message id → the distinct reply ids seen for it.
type Replies = Arc<Mutex<HashMap<String, HashSet<String>>>>;

fn record(frame: ServerFrame, replies: &Replies) {
    if let ServerFrame::Reply {
        id,
        in_reply_to: Some(answered),
        ..
    } = frame
    {
        replies.lock().unwrap().entry(answered).or_default().insert(id);
    }
}

fn chat() -> Option<ChatId> {
    Some(ChatId::new("full-disk").unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_loses_nothing_and_answers_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let _mount = match Tmpfs::mount(&data, "4m") {
        Ok(mount) => mount,
        Err(why) => {
            support::skip::skipped(
                "a_full_disk_loses_nothing_and_answers_once",
                Need::Tmpfs,
                &why.to_string(),
            );
            return;
        }
    };
    let filler = dir.path().join("data").join("filler");
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        if last_user_text(request) == HELD {
            Script::Hang
        } else {
            Script::Echo
        }
    });
    let config = write_config(dir.path(), &llm.base_url());
    let socket = socket_path(dir.path());
    let replies: Replies = Arc::default();
    let mut accepted = Vec::new();

    // First life: the disk fills up under it.
    let mut daemon = Running::start(&config).await;
    let mut admin = Client::connect(&socket, None).await.unwrap();
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    client.send(Some(HELD.into()), HELD, None).await.unwrap();
    accepted.push(HELD.to_string());
    llm.wait_for_requests(1, WAIT).await;
    fill(&filler);
    let mut refused = None;
    for n in 0..ATTEMPTS {
        let id = format!("m{n}");
        match client.send(Some(id.clone()), &id, None).await {
            Ok(_) => accepted.push(id),
            Err(error) => {
                refused = Some(error);
                break;
            }
        }
    }
    let refused = refused.unwrap_or_else(|| panic!("{ATTEMPTS} messages accepted on a full disk"));
    eprintln!("{} accepted, then: {refused}", accepted.len());

    // It says why, in its status and in doctor, while it drains. The status
    // document says it only in the moment before the failure stops the
    // intake; after that the socket answers "shutting down", and the
    // failure is told by doctor (the disk's free space) and the log.
    match admin
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
    {
        Ok(status) => {
            let store = &status["store"];
            assert_eq!(store["failed"], true, "{status}");
            let error = store["error"].as_str().unwrap_or_default();
            assert!(error.contains("No space left on device"), "{status}");
        }
        Err(error) => {
            eprintln!("status: {error}");
            assert!(error.to_string().contains("shutting down"), "status: {error}");
        }
    }
    let doctor = run_cli(&config, &["doctor"]).await;
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text.lines().find(|line| line.contains("store")).unwrap_or_default();
    eprintln!("doctor: {line}");
    assert!(line.starts_with("failed"), "doctor on a full disk: {text}");
    assert!(
        line.contains("No space left on device") || line.contains("bytes free"),
        "doctor says why: {text}"
    );
    assert_eq!(doctor.status.code(), Some(1), "{text}");

    // The held turn ends (the model goes away); the daemon exits non-zero.
    let events = tokio::spawn({
        let replies = replies.clone();
        async move {
            while let Ok(frame) = client.next_event().await {
                record(frame, &replies);
            }
        }
    });
    llm.shutdown();
    let exit = tokio::time::timeout(WAIT * 3, daemon.child.wait())
        .await
        .expect("the daemon exits after its store failed")
        .unwrap();
    assert!(!exit.success(), "a failed store exits non-zero: {exit:?}");
    let _ = tokio::time::timeout(WAIT, events).await;
    let logs = daemon.logs.lock().unwrap().join("\n");
    assert!(logs.contains("No space left on device"), "the log says why:\n{logs}");
    drop(admin);

    // Second life: space is back.
    std::fs::remove_file(&filler).unwrap();
    let llm = FakeLlm::start().await;
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    let all_answered = async {
        loop {
            let done = {
                let replies = replies.lock().unwrap();
                accepted.iter().all(|id| replies.contains_key(id))
            };
            if done {
                return;
            }
            let frame = client.next_event().await.expect("the daemon stays up");
            record(frame, &replies);
        }
    };
    if tokio::time::timeout(WAIT * 3, all_answered).await.is_err() {
        let replies = replies.lock().unwrap();
        let missing: Vec<_> = accepted.iter().filter(|id| !replies.contains_key(*id)).collect();
        panic!("accepted but never answered: {missing:?}");
    }
    let status = client
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
        .unwrap();
    assert_eq!(status["store"]["failed"], false, "{status}");
    let exit = daemon.terminate().await;
    assert!(exit.success(), "clean exit after SIGTERM: {exit:?}");
    // Whatever else reached the client before the daemon closed it counts too.
    while let Ok(frame) = client.next_event().await {
        record(frame, &replies);
    }
    let replies = replies.lock().unwrap();
    for id in &accepted {
        assert_eq!(replies[id].len(), 1, "{id} answered more than once: {:?}", replies[id]);
    }
}
