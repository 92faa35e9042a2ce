//! Where the signal-cli daemon listens: a Unix socket or a TCP address.
//!
//! Configured as text — `unix:/run/signal-cli/socket` or `tcp:127.0.0.1:7583`,
//! the forms of `signal-cli daemon --socket` / `--tcp` — and parsed once here.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use thiserror::Error;

/// The address of a signal-cli daemon.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A Unix domain socket (`signal-cli daemon --socket PATH`).
    Unix(PathBuf),
    /// A TCP address, `HOST:PORT` (`signal-cli daemon --tcp HOST:PORT`).
    Tcp(String),
}

/// A configured endpoint that is neither `unix:PATH` nor `tcp:HOST:PORT`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid signal-cli endpoint {value:?}: {reason}")]
pub struct InvalidEndpoint {
    /// The endpoint as configured.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for Endpoint {
    type Err = InvalidEndpoint;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| InvalidEndpoint {
            value: value.to_owned(),
            reason,
        };
        if let Some(path) = value.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(invalid("the socket path is empty"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(address) = value.strip_prefix("tcp:") {
            let (host, port) = address
                .rsplit_once(':')
                .ok_or_else(|| invalid("expected tcp:HOST:PORT"))?;
            if host.is_empty() {
                return Err(invalid("the host is empty"));
            }
            port.parse::<u16>()
                .map_err(|_| invalid("the port is not a number from 0 to 65535"))?;
            return Ok(Endpoint::Tcp(address.to_owned()));
        }
        Err(invalid("expected unix:PATH or tcp:HOST:PORT"))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
            Endpoint::Tcp(address) => write!(f, "tcp:{address}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms_and_round_trips() {
        let unix: Endpoint = "unix:/run/signal-cli/socket".parse().unwrap();
        assert_eq!(unix, Endpoint::Unix("/run/signal-cli/socket".into()));
        assert_eq!(unix.to_string(), "unix:/run/signal-cli/socket");
        let tcp: Endpoint = "tcp:127.0.0.1:7583".parse().unwrap();
        assert_eq!(tcp, Endpoint::Tcp("127.0.0.1:7583".into()));
        assert_eq!(tcp.to_string(), "tcp:127.0.0.1:7583");
        assert_eq!(
            "tcp:[::1]:7583".parse::<Endpoint>().unwrap(),
            Endpoint::Tcp("[::1]:7583".into())
        );
    }

    #[test]
    fn rejects_what_is_not_an_endpoint() {
        for bad in [
            "",
            "unix:",
            "tcp:",
            "tcp:host",
            "tcp::80",
            "tcp:host:99999",
            "/run/socket",
            "http://x",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad:?} parsed");
        }
    }
}
