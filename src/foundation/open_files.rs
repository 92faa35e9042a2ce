//! The daemon's limit on open files, raised at start from its soft value to
//! the hard one: every connection, pipe and store file is one, and a limit
//! left at the usual soft 1024 lets a burst of connections on one gateway
//! leave none for another gateway, the control socket or a tool's spawn.
//! The hard limit is the ceiling the system set for the daemon; raising to
//! it needs no privilege.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The soft and hard limits after the raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raised {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// Raises the soft limit on open files to the hard one; the limits as
/// they stand after, or the error that kept it where it was.
pub fn raise() -> Result<Raised, rustix::io::Errno> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
    }
    let after = getrlimit(Resource::Nofile);
    Ok(Raised {
        soft: after.current,
        hard: after.maximum,
    })
}
