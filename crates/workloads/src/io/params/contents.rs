//! fio's buffer options as a job gives them (what they do to a block: `io/contents.rs`).

use serde::{Deserialize, Serialize};

use crate::options::Parsed;

/// fio's buffer options, as the job file gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Contents {
    pub zero: bool,
    pub refill: bool,
    pub scramble: bool,
    /// Percent of each chunk that is zeros, and the chunk's bytes.
    pub compress_percent: u32,
    pub compress_chunk: u64,
    /// Percent of the fills that repeat the one before.
    pub dedupe_percent: u32,
}

impl Contents {
    /// The options, with fio's rules between them: a block that compresses entirely is
    /// zeros; one that compresses in part is filled anew for every write unless
    /// `refill_buffers` is given, and so is every block with `dedupe_percentage`; neither
    /// is scrambled.
    pub(crate) fn of(p: &Parsed) -> Contents {
        let mut c = Contents {
            zero: p.flag("zero-buffers"),
            refill: p.flag("refill-buffers"),
            scramble: p.flag("scramble-buffers"),
            compress_percent: p
                .small("buffer-compress-percentage")
                .expect("has a default"),
            compress_chunk: p.num("buffer-compress-chunk").expect("has a default"),
            dedupe_percent: p.small("dedupe-percentage").expect("has a default"),
        };
        match c.compress_percent {
            100 => (c.zero, c.compress_percent) = (true, 0),
            pct if pct > 0 && !p.explicit("refill-buffers") => c.refill = true,
            _ => {}
        }
        if c.dedupe_percent > 0 {
            c.refill = true;
        }
        // fio scrambles unless zeros were asked for, or compressible or repeated data.
        let shaped = p.explicit("buffer-compress-percentage") || p.explicit("dedupe-percentage");
        c.scramble &= !(shaped || (c.zero && p.explicit("zero-buffers")));
        c
    }

    /// Whether the blocks are fio's random data made once (nothing to do here).
    pub(crate) fn plain(&self) -> bool {
        !self.zero && self.compress_percent == 0 && self.dedupe_percent == 0
    }
}
