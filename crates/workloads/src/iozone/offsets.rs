//! The orders IOzone visits records in: sequential, backward, random and stride, each record exactly once.

use super::*;

/// The order records are visited in, as record indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Backward,
    /// Every record once, in a pseudo-random order.
    Random,
    /// Record i·stride mod n: every record once when the stride is coprime to n.
    Stride,
    /// The same record every time.
    Same,
}

pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The i-th record index of `pattern` over `n` records, without a table: random uses a
/// full-period LCG over the next power of two, skipping values ≥ n (cycle walking).
pub struct Offsets {
    pattern: Pattern,
    n: u64,
    i: u64,
    state: u64,
    mask: u64,
    stride: u64,
}

impl Offsets {
    pub fn new(pattern: Pattern, n: u64) -> Offsets {
        let mut stride = STRIDE;
        while n > 1 && gcd(stride, n) != 1 {
            stride += 1;
        }
        Offsets {
            pattern,
            n,
            i: 0,
            state: 0x2545_f491,
            mask: n.next_power_of_two().max(2) - 1,
            stride,
        }
    }
}

impl Iterator for Offsets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.i >= self.n {
            return None;
        }
        let i = self.i;
        self.i += 1;
        Some(match self.pattern {
            Pattern::Sequential => i,
            Pattern::Backward => self.n - 1 - i,
            Pattern::Same => 0,
            Pattern::Stride => i * self.stride % self.n,
            Pattern::Random => loop {
                // a ≡ 1 (mod 4), c odd: full period modulo a power of two.
                self.state = (self
                    .state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407))
                    & self.mask;
                if self.state < self.n {
                    break self.state;
                }
            },
        })
    }
}
