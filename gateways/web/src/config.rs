//! `[web]` as the configuration file describes it, and the checks on it
//! serde cannot express: the dashboard listens beyond this machine only when
//! told so twice (`allow_remote`, and the `public_url` people reach it at).

use std::net::SocketAddr;

use axum::http::Uri;
use serde::{Deserialize, Serialize};

/// Where the dashboard listens by default: this machine only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// `[web]`: the browser dashboard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSection {
    /// Serve the dashboard (off by default).
    pub enabled: bool,
    /// The address and port to listen on; port 0 takes a free one.
    pub listen: SocketAddr,
    /// Listen on an address other machines reach (needs `public_url`).
    pub allow_remote: bool,
    /// The address people open, when it is not `listen` (behind a TLS
    /// proxy, say): `https://assistant.example.org`. Its host is accepted in
    /// `Host`, and sign-in links point there.
    pub public_url: Option<String>,
    /// Serve `/metrics` without an API key or a signed-in browser (to a
    /// scraper on this machine, say). Off: every local user could read it.
    pub open_metrics: bool,
    /// The users of this machine (uids, as `id -u` prints them) whose
    /// browsers may reach a dashboard listening on this machine only,
    /// besides the user the daemon runs as: the owner's, when the daemon
    /// runs as a service user of its own.
    pub local_users: Vec<u32>,
}

impl Default for WebSection {
    fn default() -> Self {
        Self {
            enabled: false,
            listen: DEFAULT_LISTEN.parse().expect("the default listen address is valid"),
            allow_remote: false,
            public_url: None,
            open_metrics: false,
            local_users: Vec::new(),
        }
    }
}

impl WebSection {
    /// Every problem with the section, as sentences naming the key. Empty when valid.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !(self.listen.ip().is_loopback() || self.allow_remote && self.public_url.is_some()) {
            problems.push(format!(
                "web.listen {} is not a loopback address: to serve the dashboard beyond this machine set \
                 web.allow_remote = true and web.public_url (its https:// address)",
                self.listen
            ));
        }
        if let Some(url) = &self.public_url
            && public_authority(url).is_none()
        {
            problems.push(format!(
                "web.public_url {url:?} is not an http:// or https:// address with a host"
            ));
        }
        problems
    }

    /// What `doctor` should warn of: a public address without TLS, where
    /// the session cookie and sign-in links cross the network in the clear.
    pub fn warnings(&self) -> Vec<String> {
        match &self.public_url {
            Some(url) if !url.starts_with("https://") => vec![format!(
                "web.public_url {url} is not https://: sign-in links and session cookies travel unencrypted"
            )],
            _ => Vec::new(),
        }
    }
}

/// The scheme (`http`/`https`) and authority (`host[:port]`, lower case)
/// of `url`, or none when it is not an http(s) URL with a host. A port that
/// is the scheme's own (`:443` for https, `:80` for http) is dropped, since
/// browsers leave it out of `Host` and `Origin`.
pub(crate) fn public_authority(url: &str) -> Option<(String, String)> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = uri.authority()?;
    // Credentials in the URL are not an address to serve at.
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return None;
    }
    let default_port = if scheme == "https" { 443 } else { 80 };
    let authority = match authority.port_u16() {
        Some(port) if port == default_port => authority.host().to_ascii_lowercase(),
        _ => authority.as_str().to_ascii_lowercase(),
    };
    Some((scheme, authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(listen: &str, allow_remote: bool, public_url: Option<&str>) -> WebSection {
        WebSection {
            enabled: true,
            listen: listen.parse().unwrap(),
            allow_remote,
            public_url: public_url.map(str::to_owned),
            open_metrics: false,
            local_users: Vec::new(),
        }
    }

    #[test]
    fn the_default_is_off_and_on_this_machine_only() {
        let default = WebSection::default();
        assert!(!default.enabled);
        assert_eq!(default.listen.to_string(), DEFAULT_LISTEN);
        assert!(default.problems().is_empty());
    }

    #[test]
    fn a_remote_listen_needs_allow_remote_and_a_public_url() {
        let problems = section("0.0.0.0:8787", false, None).problems();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("web.listen 0.0.0.0:8787 is not a loopback address"),
            "{problems:?}"
        );
        assert_eq!(section("0.0.0.0:8787", true, None).problems().len(), 1);
        assert_eq!(
            section("0.0.0.0:8787", false, Some("https://a.example"))
                .problems()
                .len(),
            1
        );
        assert!(
            section("0.0.0.0:8787", true, Some("https://a.example"))
                .problems()
                .is_empty()
        );
        assert!(section("[::1]:0", false, None).problems().is_empty());
    }

    #[test]
    fn a_public_url_must_be_http_with_a_host_and_is_warned_of_without_tls() {
        let bad = section("127.0.0.1:0", false, Some("ftp://a.example")).problems();
        assert_eq!(
            bad,
            ["web.public_url \"ftp://a.example\" is not an http:// or https:// address with a host"]
        );
        assert_eq!(
            section("127.0.0.1:0", false, Some("https://u:p@a.example"))
                .problems()
                .len(),
            1
        );
        let plain = section("127.0.0.1:0", false, Some("http://a.example"));
        assert!(plain.problems().is_empty());
        assert_eq!(plain.warnings().len(), 1);
        assert!(
            section("127.0.0.1:0", false, Some("https://a.example"))
                .warnings()
                .is_empty()
        );
        assert_eq!(
            public_authority("HTTPS://A.Example:8443/x"),
            Some(("https".into(), "a.example:8443".into()))
        );
    }

    #[test]
    fn a_public_urls_default_port_is_not_part_of_its_host() {
        assert_eq!(
            public_authority("https://A.example:443/"),
            Some(("https".into(), "a.example".into()))
        );
        assert_eq!(
            public_authority("http://a.example:80"),
            Some(("http".into(), "a.example".into()))
        );
        assert_eq!(
            public_authority("http://a.example:443"),
            Some(("http".into(), "a.example:443".into())),
            "443 is only https's own"
        );
    }
}
