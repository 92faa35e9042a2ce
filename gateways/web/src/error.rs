//! Why the web gateway could not start.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;

/// A failure to set up the dashboard.
#[derive(Debug, Error)]
pub enum WebError {
    /// The address could not be bound (in use, not this machine's, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why not.
        #[source]
        source: io::Error,
    },
}
