//! Injectable randomness for the loops' jitter and supervisor dice, so tests
//! can seed it and see the same sleeps and the same supervisor iterations on
//! every run.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A source of uniform numbers in `[0, 1)`.
pub trait Random: Send {
    /// The next number, uniform in `[0, 1)`.
    fn unit(&mut self) -> f64;
}

/// The standard generator, seeded (reproducible) or from the OS.
pub struct Seeded(StdRng);

impl Seeded {
    /// A generator that yields the same numbers for the same seed.
    pub fn new(seed: u64) -> Self {
        Self(StdRng::seed_from_u64(seed))
    }

    /// A generator seeded from the operating system.
    pub fn from_os() -> Self {
        Self(StdRng::from_os_rng())
    }

    /// A generator for one loop of a seeded registry: each name gets its own
    /// stream, and the same name the same stream whatever order loops start in.
    pub fn for_name(seed: u64, name: &str) -> Self {
        Self::new(seed ^ fnv1a(name.as_bytes()))
    }
}

impl Random for Seeded {
    fn unit(&mut self) -> f64 {
        self.0.random::<f64>()
    }
}

/// FNV-1a: a stable hash (the standard library's may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_and_names_differ() {
        let draw = |mut random: Seeded| (0..5).map(|_| random.unit()).collect::<Vec<_>>();
        assert_eq!(draw(Seeded::new(7)), draw(Seeded::new(7)));
        assert_eq!(draw(Seeded::for_name(7, "a")), draw(Seeded::for_name(7, "a")));
        assert_ne!(draw(Seeded::for_name(7, "a")), draw(Seeded::for_name(7, "b")));
        assert!(draw(Seeded::new(1)).iter().all(|x| (0.0..1.0).contains(x)));
    }
}
