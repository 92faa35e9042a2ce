//! Which network addresses `http_get` may connect to. The model chooses the
//! URL, so without a check it could reach this machine's services, the LAN or
//! a cloud metadata endpoint (server-side request forgery). [`classify`] names
//! the non-public range an address falls in — IPv6 forms that embed an IPv4
//! address (mapped, compatible, NAT64, 6to4) are judged by the IPv4 address a
//! packet would finally reach — and [`AddressPolicy`] applies the
//! `allow_private` setting. [`CheckedResolver`] applies it where it cannot be
//! dodged: to the addresses a name resolves to, handing the HTTP client only
//! the accepted ones, so the connection goes to exactly the checked address
//! (no DNS rebinding between check and connect).

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use thiserror::Error;

/// A non-public address range, named so that a refusal can say why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// `0.0.0.0`, `::`: "any address", which reaches this machine.
    Unspecified,
    /// `0.0.0.0/8`: "this network".
    ThisNetwork,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, unique local `fc00::/7`, site-local `fec0::/10`.
    Private,
    /// `100.64.0.0/10`, carrier-grade NAT.
    SharedAddressSpace,
    /// `169.254/16` (cloud metadata services live here), `fe80::/10`.
    LinkLocal,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15`, `2001:2::/48`.
    Benchmarking,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Everything else not globally routable: `192.0.0/24`, `192.88.99/24`,
    /// `240/4`, Teredo `2001::/32`, local-use NAT64 `64:ff9b:1::/48`, discard
    /// `100::/64`, and IPv6 outside global unicast `2000::/3`.
    Reserved,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unspecified => "the unspecified address",
            Self::ThisNetwork => "a \"this network\" address",
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::SharedAddressSpace => "a carrier-grade NAT address",
            Self::LinkLocal => "a link-local address (where cloud metadata services live)",
            Self::Documentation => "a documentation address",
            Self::Benchmarking => "a benchmarking address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved, not globally routable address",
        })
    }
}

/// IPv4 blocks, more specific first: the first match names the range.
const V4_BLOCKS: &[(Ipv4Addr, u8, Range)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 32, Range::Unspecified),
    (Ipv4Addr::new(255, 255, 255, 255), 32, Range::Broadcast),
    (Ipv4Addr::new(0, 0, 0, 0), 8, Range::ThisNetwork),
    (Ipv4Addr::new(10, 0, 0, 0), 8, Range::Private),
    (Ipv4Addr::new(100, 64, 0, 0), 10, Range::SharedAddressSpace),
    (Ipv4Addr::new(127, 0, 0, 0), 8, Range::Loopback),
    (Ipv4Addr::new(169, 254, 0, 0), 16, Range::LinkLocal),
    (Ipv4Addr::new(172, 16, 0, 0), 12, Range::Private),
    (Ipv4Addr::new(192, 0, 0, 0), 24, Range::Reserved),
    (Ipv4Addr::new(192, 0, 2, 0), 24, Range::Documentation),
    (Ipv4Addr::new(192, 88, 99, 0), 24, Range::Reserved),
    (Ipv4Addr::new(192, 168, 0, 0), 16, Range::Private),
    (Ipv4Addr::new(198, 18, 0, 0), 15, Range::Benchmarking),
    (Ipv4Addr::new(198, 51, 100, 0), 24, Range::Documentation),
    (Ipv4Addr::new(203, 0, 113, 0), 24, Range::Documentation),
    (Ipv4Addr::new(224, 0, 0, 0), 4, Range::Multicast),
    (Ipv4Addr::new(240, 0, 0, 0), 4, Range::Reserved),
];

/// IPv6 blocks checked after the IPv4 embeddings, more specific first.
const V6_BLOCKS: &[(Ipv6Addr, u8, Range)] = &[
    (Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0), 48, Range::Benchmarking),
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, Range::Reserved),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, Range::Documentation),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, Range::Documentation),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, Range::Private),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, Range::LinkLocal),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, Range::Private),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, Range::Multicast),
];

/// The non-public range `address` is in, or `None` for a public address.
pub fn classify(address: IpAddr) -> Option<Range> {
    match address {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(address: Ipv4Addr) -> Option<Range> {
    let bits = u32::from(address);
    V4_BLOCKS
        .iter()
        .find(|(network, length, _)| prefix_matches(u128::from(bits), u128::from(u32::from(*network)), *length, 32))
        .map(|(_, _, range)| *range)
}

fn classify_v6(address: Ipv6Addr) -> Option<Range> {
    if address.is_unspecified() {
        return Some(Range::Unspecified);
    }
    if address.is_loopback() {
        return Some(Range::Loopback);
    }
    if let Some(v4) = embedded_ipv4(address) {
        return classify_v4(v4);
    }
    let bits = u128::from(address);
    let listed = V6_BLOCKS
        .iter()
        .find(|(network, length, _)| prefix_matches(bits, u128::from(*network), *length, 128))
        .map(|(_, _, range)| *range);
    if listed.is_some() {
        return listed;
    }
    // Only 2000::/3 is allocated for global unicast; the rest (discard-only
    // 100::/64, local-use NAT64 64:ff9b:1::/48, unassigned space) is not a
    // web server's address.
    let global_unicast = prefix_matches(bits, u128::from(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0)), 3, 128);
    (!global_unicast).then_some(Range::Reserved)
}

/// The IPv4 address an IPv6 address stands for, where the IPv6 form only
/// carries it: IPv4-mapped `::ffff:a.b.c.d` (the socket layer connects to
/// the IPv4 address itself), IPv4-translated `::ffff:0:a.b.c.d`, deprecated
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` (a NAT64 gateway
/// forwards to the IPv4 address) and 6to4 `2002:AABB:CCDD::/48` (the 6to4
/// relay delivers to the IPv4 address). `::` and `::1` are not embeddings.
pub fn embedded_ipv4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(address);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let segments = address.segments();
    let zero_prefix = segments[..5] == [0; 5];
    if zero_prefix && segments[5] == 0xffff {
        return Some(low32);
    }
    if segments[..4] == [0; 4] && segments[4] == 0xffff && segments[5] == 0 {
        return Some(low32);
    }
    if zero_prefix && segments[5] == 0 && bits > 1 {
        return Some(low32);
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low32);
    }
    if segments[0] == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

/// Whether the top `length` bits of `address` and `network` (both `width`
/// bits wide) are equal.
fn prefix_matches(address: u128, network: u128, length: u8, width: u32) -> bool {
    let shift = width - u32::from(length);
    length == 0 || address >> shift == network >> shift
}

/// A connection `http_get` will not make, and why.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub struct Blocked {
    /// The address that would have been connected to.
    pub address: IpAddr,
    /// The non-public range it is in.
    pub range: Range,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.address, self.range)?;
        if let IpAddr::V6(v6) = self.address
            && let Some(v4) = embedded_ipv4(v6)
        {
            write!(f, " (it carries the IPv4 address {v4})")?;
        }
        Ok(())
    }
}

/// Which addresses may be connected to: public ones always, non-public ones
/// only with `allow_private` — or, for a host name listed as exempt, whatever
/// it resolves to. The exemption exists so that tests can stand up a
/// "public" server on loopback behind a made-up name while every other
/// address, including the same loopback address written literally in a URL
/// or reached through another name, is still checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allow_private: bool,
    exempt_hosts: BTreeSet<String>,
}

impl AddressPolicy {
    /// Public addresses only, unless `allow_private`.
    pub fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            ..Self::default()
        }
    }

    /// Also accept any address the host name `host` resolves to. Names only:
    /// an IP address written in a URL is never exempt.
    pub fn exempt_host(mut self, host: &str) -> Self {
        self.exempt_hosts.insert(host.to_ascii_lowercase());
        self
    }

    /// Checks an address written literally in a URL.
    pub fn check_literal(&self, address: IpAddr) -> Result<(), Blocked> {
        if self.allow_private {
            return Ok(());
        }
        match classify(address) {
            Some(range) => Err(Blocked { address, range }),
            None => Ok(()),
        }
    }

    /// Checks an address the name `host` resolved to.
    pub fn check_resolved(&self, host: &str, address: IpAddr) -> Result<(), Blocked> {
        if self.exempt_hosts.contains(&host.to_ascii_lowercase()) {
            return Ok(());
        }
        self.check_literal(address)
    }
}

/// A host name none of whose addresses may be connected to; the error
/// [`CheckedResolver`] fails with, found again among reqwest's error sources.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{host} resolves to {}, which is {}", blocked.address, blocked.range)]
pub struct NoPublicAddress {
    /// The name looked up.
    pub host: String,
    /// The first of its addresses that was refused.
    pub blocked: Blocked,
}

/// A reqwest resolver that looks names up with `lookup`, then keeps only the
/// addresses the policy accepts. A name with some acceptable addresses
/// resolves to those; a name with none fails with [`NoPublicAddress`].
pub struct CheckedResolver {
    lookup: Arc<dyn Resolve>,
    policy: Arc<AddressPolicy>,
}

impl CheckedResolver {
    /// Checks `lookup`'s answers against `policy`.
    pub fn new(lookup: Arc<dyn Resolve>, policy: Arc<AddressPolicy>) -> Self {
        Self { lookup, policy }
    }
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.lookup.resolve(name);
        let policy = self.policy.clone();
        Box::pin(async move {
            let mut refused = None;
            let mut allowed = Vec::new();
            for address in lookup.await? {
                match policy.check_resolved(&host, address.ip()) {
                    Ok(()) => allowed.push(address),
                    Err(blocked) => {
                        tracing::debug!(host = %host, address = %address.ip(), "skipping a non-public address");
                        refused.get_or_insert(blocked);
                    }
                }
            }
            match refused {
                Some(blocked) if allowed.is_empty() => Err(Box::new(NoPublicAddress { host, blocked }) as _),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}

/// The system resolver (getaddrinfo, on tokio's blocking pool).
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks every address in each group (separated by spaces) against the
    /// group's range.
    #[track_caller]
    fn assert_ranges(groups: &[(Option<Range>, &str)]) {
        for (expected, addresses) in groups {
            for address in addresses.split_whitespace() {
                let parsed: IpAddr = address.parse().expect("test addresses parse");
                assert_eq!(classify(parsed), *expected, "{address}");
            }
        }
    }

    /// Each range by its first and last address, and the public neighbours
    /// just outside it, so a wrong prefix length shows.
    #[test]
    fn ipv4_ranges_are_classified_at_their_edges() {
        assert_ranges(&[
            (Some(Range::Unspecified), "0.0.0.0"),
            (Some(Range::ThisNetwork), "0.0.0.1 0.255.255.255"),
            (
                Some(Range::Private),
                "10.0.0.0 10.255.255.255 172.16.0.0 172.31.255.255 192.168.0.0 192.168.255.255",
            ),
            (Some(Range::SharedAddressSpace), "100.64.0.0 100.127.255.255"),
            (Some(Range::Loopback), "127.0.0.0 127.0.0.1 127.255.255.255"),
            (Some(Range::LinkLocal), "169.254.0.0 169.254.169.254 169.254.255.255"),
            (Some(Range::Documentation), "192.0.2.1 198.51.100.7 203.0.113.255"),
            (Some(Range::Benchmarking), "198.18.0.0 198.19.255.255"),
            (Some(Range::Multicast), "224.0.0.1 239.255.255.255"),
            (Some(Range::Reserved), "192.0.0.8 192.88.99.1 240.0.0.0 255.255.255.254"),
            (Some(Range::Broadcast), "255.255.255.255"),
            (
                None,
                "1.0.0.0 9.255.255.255 11.0.0.0 100.63.255.255 100.128.0.0 126.255.255.255 128.0.0.0",
            ),
            (
                None,
                "169.253.255.255 169.255.0.0 172.15.255.255 172.32.0.0 192.0.1.255 192.167.255.255",
            ),
            (None, "192.169.0.0 198.17.255.255 198.20.0.0 223.255.255.255 8.8.8.8"),
        ]);
    }

    #[test]
    fn ipv6_ranges_are_classified_at_their_edges() {
        assert_ranges(&[
            (Some(Range::Unspecified), "::"),
            (Some(Range::Loopback), "::1"),
            (Some(Range::Benchmarking), "2001:2::1"),
            (Some(Range::Documentation), "2001:db8::1 3fff::1 3fff:fff::1"),
            (Some(Range::Private), "fc00::1 fdff:ffff::1 fec0::1"),
            (Some(Range::LinkLocal), "fe80::1 febf:ffff::1"),
            (Some(Range::Multicast), "ff02::1"),
            (
                Some(Range::Reserved),
                "100::1 1fff:ffff::1 2001::1 4000::1 64:ff9b:1::1 fbff:ffff::1",
            ),
            (None, "2000:: 2001:3::1 2001:db9::1 3fff:1000::1 2606:4700:4700::1111"),
        ]);
    }

    #[test]
    fn ipv6_forms_carrying_an_ipv4_address_are_judged_by_it() {
        assert_ranges(&[
            (
                Some(Range::Loopback),
                "::ffff:127.0.0.1 ::ffff:7f00:1 ::ffff:0:127.0.0.1 ::127.0.0.1",
            ),
            (Some(Range::Loopback), "64:ff9b::127.0.0.1 2002:7f00:1::1"),
            (Some(Range::LinkLocal), "::ffff:169.254.169.254 64:ff9b::a9fe:a9fe"),
            (Some(Range::Private), "::ffff:10.1.2.3 ::192.168.1.1 2002:c0a8:101::"),
            (Some(Range::ThisNetwork), "::0.0.0.2"),
            (None, "::ffff:8.8.8.8 64:ff9b::8.8.8.8 2002:808:808::1"),
        ]);
    }

    #[test]
    fn blocked_names_the_address_the_range_and_an_embedded_ipv4() {
        let policy = AddressPolicy::new(false);
        let blocked = policy.check_literal("::ffff:127.0.0.1".parse().unwrap()).unwrap_err();
        assert_eq!(
            blocked.to_string(),
            "::ffff:127.0.0.1 is a loopback address (it carries the IPv4 address 127.0.0.1)"
        );
        let blocked = policy.check_literal("10.0.0.1".parse().unwrap()).unwrap_err();
        assert_eq!(blocked.to_string(), "10.0.0.1 is a private address");
    }

    #[test]
    fn allow_private_accepts_everything_and_exemptions_cover_names_only() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(AddressPolicy::new(true).check_literal(loopback).is_ok());
        assert!(AddressPolicy::new(true).check_resolved("anything", loopback).is_ok());

        let policy = AddressPolicy::new(false).exempt_host("Public.Test");
        assert!(policy.check_resolved("public.test", loopback).is_ok());
        assert!(policy.check_resolved("other.test", loopback).is_err());
        assert!(policy.check_literal(loopback).is_err());
        assert!(policy.check_literal("8.8.8.8".parse().unwrap()).is_ok());
    }
}
