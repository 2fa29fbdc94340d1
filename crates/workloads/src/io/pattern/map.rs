//! fio's random map: the blocks of one file already done this pass.

use serde::{Deserialize, Serialize};

/// Blocks of one file already done this pass (fio's random map), in the pattern's units.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Map {
    pub(super) words: Vec<u64>,
}

impl Map {
    pub(super) fn new(blocks: u64) -> Map {
        Map {
            words: vec![0; blocks.div_ceil(64) as usize],
        }
    }

    pub(super) fn clear(&mut self) {
        self.words.fill(0);
    }

    pub(super) fn used(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    pub(super) fn mark(&mut self, from: u64, count: u64) {
        for b in from..from + count {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
    }

    /// The first free block at or after `b`, wrapping around; `None` when all are used.
    pub(super) fn next_free(&self, b: u64, blocks: u64) -> Option<u64> {
        let start = (b / 64) as usize;
        let n = self.words.len();
        for i in 0..=n {
            let w = (start + i) % n;
            let mut free = !self.words[w];
            if i == 0 {
                free &= u64::MAX << (b % 64);
            }
            if free != 0 {
                let found = w as u64 * 64 + u64::from(free.trailing_zeros());
                if found < blocks {
                    return Some(found);
                }
            }
        }
        None
    }
}
