//! Whose a loopback connection is. Browsers send a cookie to every server
//! on `127.0.0.1` whatever its port, so a page another local user serves
//! could receive the dashboard's session; what the browser sends here is
//! only taken from the daemon's own user. The kernel knows the user of each
//! end of a loopback TCP connection (as identd tells): the client's socket
//! is the line of `/proc/net/tcp` (or `tcp6`) whose local address is the
//! connection's remote one and whose remote address is our end, and its
//! `uid` column is the user who made it.
//!
//! The tables are read from `/proc/self/net/`, this process's own network
//! namespace, where every loopback peer's socket is. A peer whose line is
//! not found (it went away meanwhile) has no known user and is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The tables of TCP sockets, IPv4 then IPv6.
const TABLES: [&str; 2] = ["/proc/self/net/tcp", "/proc/self/net/tcp6"];

/// The user owning the other end of the loopback connection from `peer`
/// to `ours`, when the kernel's tables name it.
pub fn of_loopback_peer(peer: SocketAddr, ours: SocketAddr) -> Option<u32> {
    TABLES.iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        find_uid(&text, peer, ours)
    })
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
    fn this_processs_own_connection_is_its_own_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let uid = of_loopback_peer(peer, listener.local_addr().unwrap());
        assert_eq!(uid, Some(rustix::process::geteuid().as_raw()));
    }
}
