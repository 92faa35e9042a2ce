//! Telling the service manager (systemd, with `Type=notify`) how the daemon
//! is: `READY=1` once recovery is done and every gateway listens,
//! `WATCHDOG=1` at half the `WatchdogSec` interval while the runtime keeps
//! scheduling, and `STOPPING=1` when shutdown begins. The messages are
//! datagrams on the socket `NOTIFY_SOCKET` names (a path, or `@name` for an
//! abstract one); without it (not under systemd) nothing is sent.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::PathBuf;
use std::time::Duration;

/// Where notifications go, if anywhere.
#[derive(Debug, Default)]
pub struct Notifier {
    target: Option<Target>,
    /// Half the watchdog interval, when the manager expects to be fed.
    watchdog: Option<Duration>,
}

#[derive(Debug)]
enum Target {
    Path(PathBuf),
    Abstract(Vec<u8>),
}

impl Notifier {
    /// The notifier the environment asks for: `NOTIFY_SOCKET`, and
    /// `WATCHDOG_USEC` when `WATCHDOG_PID` is unset or this process.
    pub fn from_env() -> Self {
        let variable = |name| std::env::var(name).ok().filter(|value: &String| !value.is_empty());
        Self::from_values(
            variable("NOTIFY_SOCKET"),
            variable("WATCHDOG_USEC"),
            variable("WATCHDOG_PID"),
            std::process::id(),
        )
    }

    fn from_values(socket: Option<String>, usec: Option<String>, pid: Option<String>, own_pid: u32) -> Self {
        let target = socket.map(|socket| match socket.strip_prefix('@') {
            Some(name) => Target::Abstract(name.as_bytes().to_vec()),
            None => Target::Path(PathBuf::from(socket)),
        });
        let for_us = pid.is_none_or(|pid| pid.parse::<u32>() == Ok(own_pid));
        let watchdog = usec
            .and_then(|usec| usec.parse::<u64>().ok())
            .filter(|usec| *usec > 0 && for_us && target.is_some())
            .map(|usec| Duration::from_micros(usec) / 2);
        Self { target, watchdog }
    }

    /// How often to feed the watchdog, if the manager runs one.
    pub fn watchdog_every(&self) -> Option<Duration> {
        self.watchdog
    }

    /// The daemon is ready; `status` is shown by `systemctl status`.
    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={status}"));
    }

    /// The daemon is alive and its runtime schedules.
    pub fn watchdog(&self) {
        self.send("WATCHDOG=1");
    }

    /// Shutdown has begun.
    pub fn stopping(&self) {
        self.send("STOPPING=1\nSTATUS=stopping");
    }

    fn send(&self, message: &str) {
        let Some(target) = &self.target else {
            return;
        };
        let sent = UnixDatagram::unbound().and_then(|socket| {
            let address = match target {
                Target::Path(path) => SocketAddr::from_pathname(path)?,
                Target::Abstract(name) => SocketAddr::from_abstract_name(name)?,
            };
            socket.send_to_addr(message.as_bytes(), &address)
        });
        if let Err(error) = sent {
            // The manager misses one message; the daemon runs on.
            tracing::warn!(%error, "cannot notify the service manager");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_is_fed_at_half_its_interval_and_only_for_this_process() {
        let socket = || Some("/run/notify".to_owned());
        let usec = || Some("30000000".to_owned());
        let ours = Notifier::from_values(socket(), usec(), Some("7".into()), 7);
        assert_eq!(ours.watchdog_every(), Some(Duration::from_secs(15)));
        let unnamed = Notifier::from_values(socket(), usec(), None, 7);
        assert_eq!(unnamed.watchdog_every(), Some(Duration::from_secs(15)));
        let other = Notifier::from_values(socket(), usec(), Some("8".into()), 7);
        assert_eq!(other.watchdog_every(), None, "meant for another process");
        let nowhere = Notifier::from_values(None, usec(), None, 7);
        assert_eq!(nowhere.watchdog_every(), None, "no socket to feed it on");
        assert_eq!(
            Notifier::from_values(socket(), Some("x".into()), None, 7).watchdog_every(),
            None
        );
    }

    #[test]
    fn messages_reach_a_path_socket_and_nothing_is_sent_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let manager = UnixDatagram::bind(&path).unwrap();
        manager.set_nonblocking(true).unwrap();
        let notifier = Notifier::from_values(Some(path.display().to_string()), None, None, 1);
        notifier.ready("ready");
        notifier.watchdog();
        let mut buffer = [0u8; 256];
        let n = manager.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"READY=1\nSTATUS=ready");
        let n = manager.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"WATCHDOG=1");
        Notifier::default().ready("nowhere");
        assert!(manager.recv(&mut buffer).is_err(), "nothing more");
    }
}
