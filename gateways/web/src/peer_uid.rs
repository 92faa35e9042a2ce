//! Whose a loopback connection is. Browsers send a cookie to every server
//! on `127.0.0.1` whatever its port, so a page another local user serves
//! could receive the dashboard's session; what the browser sends here is
//! only taken from the users the dashboard answers. The kernel knows the
//! user of each end of a loopback TCP connection (as identd tells): the
//! client's socket is the one whose local address is the connection's
//! remote one and whose remote address is our end.
//!
//! It is asked first with one `sock_diag` netlink request naming that
//! socket exactly (as `ss` asks, no privilege needed), which costs the same
//! however many sockets the machine has; where netlink is not to be had,
//! the line is looked up in `/proc/self/net/tcp` and `tcp6` (this process's
//! own network namespace, where every loopback peer's socket is), whose
//! `uid` column says the same. A peer found in neither (it went away
//! meanwhile) has no known user and is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, netlink};

/// The tables of TCP sockets, IPv4 then IPv6.
const TABLES: [&str; 2] = ["/proc/self/net/tcp", "/proc/self/net/tcp6"];

/// The user owning the other end of the loopback connection from `peer`
/// to `ours`, when the kernel names it.
pub fn of_loopback_peer(peer: SocketAddr, ours: SocketAddr) -> Option<u32> {
    match by_sock_diag(peer, ours) {
        Ok(found) => found,
        Err(error) => {
            tracing::debug!(%error, "sock_diag cannot be asked; reading the TCP tables");
            from_tables(peer, ours)
        }
    }
}

/// The user of `peer`'s end, read from the kernel's TCP tables.
fn from_tables(peer: SocketAddr, ours: SocketAddr) -> Option<u32> {
    TABLES.iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        find_uid(&text, peer, ours)
    })
}

/// `SOCK_DIAG_BY_FAMILY`, the request and its answer's message type.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR`: the kernel's answer when it found nothing, or refused.
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST`.
const NLM_F_REQUEST: u16 = 1;
/// `IPPROTO_TCP`.
const IPPROTO_TCP: u8 = 6;
/// `ENOENT`: no such socket.
const ENOENT: i32 = 2;
/// Where `idiag_uid` is in the answer: after the netlink header (16
/// bytes), `inet_diag_msg`'s family, state, timer and retransmits (4), its
/// socket id (48), and its expiry and queues (12).
const UID_AT: usize = 16 + 4 + 48 + 12;

/// The user of `peer`'s end as `sock_diag` tells it: none when there is
/// no such socket; an error when netlink cannot be asked.
fn by_sock_diag(peer: SocketAddr, ours: SocketAddr) -> std::io::Result<Option<u32>> {
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(netlink::SOCK_DIAG),
    )?;
    // An IPv4 client may hold an IPv6 socket speaking to a mapped address.
    for (family, local, remote) in socket_ids(peer, ours) {
        rustix::net::send(&socket, &request(family, local, remote), SendFlags::empty())?;
        let mut answer = [0u8; 512];
        let (_, length) = rustix::net::recv(&socket, &mut answer[..], RecvFlags::empty())?;
        let answer = &answer[..length.min(answer.len())];
        let kind = answer.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
        match kind {
            Some(SOCK_DIAG_BY_FAMILY) => {
                let uid = answer
                    .get(UID_AT..UID_AT + 4)
                    .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                return uid
                    .map(Some)
                    .ok_or_else(|| std::io::Error::other("a short sock_diag answer"));
            }
            Some(NLMSG_ERROR) => {
                let errno = answer.get(16..20).map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                if errno != Some(-ENOENT) {
                    return Err(std::io::Error::other(format!("sock_diag refused: {errno:?}")));
                }
            }
            _ => return Err(std::io::Error::other("an unexpected sock_diag answer")),
        }
    }
    Ok(None)
}

/// The families and addresses to ask for `peer`'s socket by: as IPv4,
/// and as IPv6 (an IPv4 address mapped).
fn socket_ids(peer: SocketAddr, ours: SocketAddr) -> Vec<(AddressFamily, SocketAddr, SocketAddr)> {
    let v4 = |address: SocketAddr| match canonical(address.ip()) {
        IpAddr::V4(v4) => Some(SocketAddr::new(IpAddr::V4(v4), address.port())),
        IpAddr::V6(_) => None,
    };
    let v6 = |address: SocketAddr| match address.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), address.port()),
        v6 => SocketAddr::new(v6, address.port()),
    };
    let mut ids = Vec::new();
    if let (Some(peer), Some(ours)) = (v4(peer), v4(ours)) {
        ids.push((AddressFamily::INET, peer, ours));
    }
    ids.push((AddressFamily::INET6, v6(peer), v6(ours)));
    ids
}

/// A `SOCK_DIAG_BY_FAMILY` request for the one TCP socket whose local
/// address is `local` and remote address `remote`.
fn request(family: AddressFamily, local: SocketAddr, remote: SocketAddr) -> Vec<u8> {
    let address = |address: SocketAddr| -> [u8; 16] {
        match address.ip() {
            IpAddr::V4(v4) => {
                let mut bytes = [0u8; 16];
                bytes[..4].copy_from_slice(&v4.octets());
                bytes
            }
            IpAddr::V6(v6) => v6.octets(),
        }
    };
    let mut request = Vec::with_capacity(72);
    // The netlink header: length, type, flags, sequence, port id.
    request.extend(72u32.to_ne_bytes());
    request.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request.extend(NLM_F_REQUEST.to_ne_bytes());
    request.extend(1u32.to_ne_bytes());
    request.extend(0u32.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, extensions, padding, states.
    request.push(family.as_raw() as u8);
    request.push(IPPROTO_TCP);
    request.extend([0, 0]);
    request.extend(u32::MAX.to_ne_bytes());
    // inet_diag_sockid: ports and addresses in network order, no
    // interface, no cookie to check.
    request.extend(local.port().to_be_bytes());
    request.extend(remote.port().to_be_bytes());
    request.extend(address(local));
    request.extend(address(remote));
    request.extend(0u32.to_ne_bytes());
    request.extend(u32::MAX.to_ne_bytes());
    request.extend(u32::MAX.to_ne_bytes());
    request
}

/// The `uid` of the line of `table` (the text of `/proc/net/tcp` or
/// `tcp6`) whose local address is `local` and remote address `remote`.
pub fn find_uid(table: &str, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let mut fields = line.split_whitespace();
        let _slot = fields.next()?;
        let line_local = parse_address(fields.next()?)?;
        let line_remote = parse_address(fields.next()?)?;
        // st, tx_queue:rx_queue, tr:tm->when, retrnsmt, then uid.
        let uid = fields.nth(4)?;
        (same(line_local, local) && same(line_remote, remote))
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// Whether two addresses are one, an IPv4 one also as IPv6-mapped.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && canonical(a.ip()) == canonical(b.ip())
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address
/// as the kernel writes it, each 32-bit word in the machine's byte order.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (address, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match address.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(address)?)),
        32 => {
            let mut octets = [0u8; 16];
            for (i, chunk) in octets.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&word(address.get(i * 8..i * 8 + 8)?)?);
            }
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Eight hex digits of one word, back to its bytes in memory order.
fn word(hex: &str) -> Option<[u8; 4]> {
    Some(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as a little-endian machine writes it.
    const TABLE_V4: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
";

    const TABLE_V6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:A001 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4 1 0000000000000000 20 4 30 10 -1
";

    #[test]
    fn the_clients_end_is_found_by_both_addresses() {
        if cfg!(target_endian = "big") {
            return;
        }
        let client: SocketAddr = "127.0.0.1:54321".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(find_uid(TABLE_V4, client, server), Some(65534));
        assert_eq!(find_uid(TABLE_V4, server, client), Some(0), "our own end");
        let other: SocketAddr = "127.0.0.1:54322".parse().unwrap();
        assert_eq!(find_uid(TABLE_V4, other, server), None);
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:54321".parse().unwrap();
        assert_eq!(find_uid(TABLE_V4, mapped, server), Some(65534));
    }

    #[test]
    fn an_ipv6_line_is_read_word_by_word() {
        if cfg!(target_endian = "big") {
            return;
        }
        let client: SocketAddr = "[::1]:40961".parse().unwrap();
        let server: SocketAddr = "[::1]:8080".parse().unwrap();
        assert_eq!(find_uid(TABLE_V6, client, server), Some(1000));
    }

    #[test]
    fn this_processs_own_connection_is_its_own_user_both_ways_asked() {
        let me = rustix::process::geteuid().as_raw();
        for listen in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = std::net::TcpListener::bind(listen) else {
                continue; // no IPv6 here
            };
            let ours = listener.local_addr().unwrap();
            let client = std::net::TcpStream::connect(ours).unwrap();
            let (_accepted, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(by_sock_diag(peer, ours).unwrap(), Some(me), "{listen}");
            assert_eq!(from_tables(peer, ours), Some(me), "{listen}");
            assert_eq!(of_loopback_peer(peer, ours), Some(me));
            let gone = SocketAddr::new(peer.ip(), peer.port().wrapping_add(1));
            assert_eq!(by_sock_diag(gone, ours).unwrap(), None, "no such socket");
        }
    }
}
