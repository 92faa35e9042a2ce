//! Which `Host` and `Origin` the dashboard answers. A page from another
//! site can make a browser send requests here, and a DNS name that resolves
//! to 127.0.0.1 (DNS rebinding) makes them look same-origin to the browser;
//! only the `Host` header tells them apart, so a request naming any other
//! host is refused. A form must come from the page's own origin.

use std::net::SocketAddr;

use crate::config::public_authority;

/// The hosts (with port) the dashboard is reached at, and their origins.
#[derive(Clone, Debug)]
pub struct Hosts {
    /// `(authority, origin)`: `127.0.0.1:8787` → `http://127.0.0.1:8787`.
    allowed: Vec<(String, String)>,
}

/// Why a request's host or origin is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No `Host` header at all.
    NoHost,
    /// A host this dashboard is not.
    OtherHost,
    /// No `Origin` on a form, or another one.
    OtherOrigin,
}

impl Hosts {
    /// The hosts of a dashboard bound at `bound`, and at `public_url` when
    /// it has one: on a loopback address also `localhost` at that port.
    pub fn new(bound: SocketAddr, public_url: Option<&str>) -> Self {
        let mut authorities = vec![bound.to_string()];
        if bound.ip().is_loopback() {
            let port = bound.port();
            authorities.extend([
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ]);
        }
        let mut allowed: Vec<(String, String)> = authorities
            .into_iter()
            .map(|authority| (authority.clone(), format!("http://{authority}")))
            .collect();
        if let Some((scheme, authority)) = public_url.and_then(public_authority) {
            allowed.push((authority.clone(), format!("{scheme}://{authority}")));
        }
        allowed.dedup();
        Self { allowed }
    }

    /// Whether `host` (the `Host` header) names this dashboard.
    pub fn check_host(&self, host: Option<&str>) -> Result<(), Refused> {
        self.origin_of(host.ok_or(Refused::NoHost)?).map(|_| ())
    }

    /// Whether a form at `host` came from this dashboard's own pages: its
    /// `origin` (the `Origin` header) is the page's origin. Under
    /// `Referrer-Policy: no-referrer` a browser withholds the origin of its
    /// own forms too (`Origin: null`); then the browser's `fetch_site`
    /// (`Sec-Fetch-Site`, a header no page can set) must say `same-origin`.
    pub fn check_origin(
        &self,
        host: Option<&str>,
        origin: Option<&str>,
        fetch_site: Option<&str>,
    ) -> Result<(), Refused> {
        let expected = self.origin_of(host.ok_or(Refused::NoHost)?)?;
        match origin {
            Some(origin) if origin.eq_ignore_ascii_case(expected) => Ok(()),
            None | Some("null") if fetch_site == Some("same-origin") => Ok(()),
            _ => Err(Refused::OtherOrigin),
        }
    }

    fn origin_of(&self, host: &str) -> Result<&str, Refused> {
        self.allowed
            .iter()
            .find(|(authority, _)| authority.eq_ignore_ascii_case(host))
            .map(|(_, origin)| origin.as_str())
            .ok_or(Refused::OtherHost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Hosts {
        Hosts::new("127.0.0.1:8787".parse().unwrap(), None)
    }

    #[test]
    fn a_loopback_dashboard_answers_its_address_and_localhost_at_its_port() {
        let hosts = loopback();
        for host in ["127.0.0.1:8787", "localhost:8787", "LOCALHOST:8787", "[::1]:8787"] {
            assert_eq!(hosts.check_host(Some(host)), Ok(()), "{host}");
        }
        for host in ["evil.example:8787", "localhost:8788", "localhost", "127.0.0.1", ""] {
            assert_eq!(hosts.check_host(Some(host)), Err(Refused::OtherHost), "{host}");
        }
        assert_eq!(hosts.check_host(None), Err(Refused::NoHost));
    }

    #[test]
    fn a_public_url_adds_its_host_with_its_scheme() {
        let hosts = Hosts::new("0.0.0.0:8787".parse().unwrap(), Some("https://a.example"));
        assert_eq!(hosts.check_host(Some("a.example")), Ok(()));
        assert_eq!(hosts.check_host(Some("0.0.0.0:8787")), Ok(()));
        assert_eq!(hosts.check_host(Some("localhost:8787")), Err(Refused::OtherHost));
        assert_eq!(
            hosts.check_origin(Some("a.example"), Some("https://a.example"), None),
            Ok(())
        );
        assert_eq!(
            hosts.check_origin(Some("a.example"), Some("http://a.example"), None),
            Err(Refused::OtherOrigin)
        );
    }

    #[test]
    fn a_public_url_with_its_schemes_own_port_takes_what_browsers_send() {
        let hosts = Hosts::new("127.0.0.1:8787".parse().unwrap(), Some("https://a.example:443"));
        assert_eq!(hosts.check_host(Some("a.example")), Ok(()));
        assert_eq!(
            hosts.check_origin(Some("a.example"), Some("https://a.example"), None),
            Ok(())
        );
    }

    #[test]
    fn a_form_must_come_from_the_pages_own_origin() {
        let hosts = loopback();
        let host = Some("127.0.0.1:8787");
        assert_eq!(hosts.check_origin(host, Some("http://127.0.0.1:8787"), None), Ok(()));
        assert_eq!(
            hosts.check_origin(host, Some("http://localhost:8787"), None),
            Err(Refused::OtherOrigin),
            "another of its names is another origin"
        );
        assert_eq!(
            hosts.check_origin(host, Some("https://evil.example"), None),
            Err(Refused::OtherOrigin)
        );
        assert_eq!(hosts.check_origin(host, Some("null"), None), Err(Refused::OtherOrigin));
        assert_eq!(hosts.check_origin(host, None, None), Err(Refused::OtherOrigin));
    }

    #[test]
    fn a_withheld_origin_is_taken_only_when_the_browser_says_same_origin() {
        let hosts = loopback();
        let host = Some("127.0.0.1:8787");
        for origin in [Some("null"), None] {
            assert_eq!(hosts.check_origin(host, origin, Some("same-origin")), Ok(()));
            for site in [Some("cross-site"), Some("same-site"), Some("none"), None] {
                assert_eq!(
                    hosts.check_origin(host, origin, site),
                    Err(Refused::OtherOrigin),
                    "{site:?}"
                );
            }
        }
        assert_eq!(
            hosts.check_origin(host, Some("https://evil.example"), Some("same-origin")),
            Err(Refused::OtherOrigin),
            "an origin that is given is the one checked"
        );
        assert_eq!(
            hosts.check_origin(Some("evil.example"), None, Some("same-origin")),
            Err(Refused::OtherHost)
        );
    }
}
