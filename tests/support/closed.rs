//! An address on which nothing listens, and that stays so: a port bound for
//! the whole test run and never listening, so every connection to it is
//! refused and the system gives it to no other test running at once (a port
//! bound and let go could be).

use std::net::SocketAddr;
use std::sync::OnceLock;

/// `127.0.0.1:PORT`, refused.
pub fn address() -> SocketAddr {
    static HELD: OnceLock<(tokio::net::TcpSocket, SocketAddr)> = OnceLock::new();
    HELD.get_or_init(|| {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind a port");
        let address = socket.local_addr().expect("its address");
        (socket, address)
    })
    .1
}
