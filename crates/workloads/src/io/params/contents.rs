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
    /// Percent of the fills that repeat an earlier one.
    pub dedupe_percent: u32,
    /// fio's `dedupe_mode=working_set`: a repeated fill is one of the first fills, as many
    /// as this percentage of the job's `size` in blocks (`None`: `repeat`, the fill before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_working_set: Option<u32>,
    /// fio's `dedupe_global`: the working set's fills spread over the threads of the jobs
    /// running together (the first thread's number and their count; `None`: its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_threads: Option<(u32, u32)>,
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
            dedupe_working_set: (p.text("dedupe-mode") == Some("working_set")).then(|| {
                p.small("dedupe-working-set-percentage")
                    .expect("has a default")
            }),
            // A job's copies; a job file's jobs count every job running together.
            dedupe_threads: (p.flag("dedupe-global"))
                .then(|| (0, p.small("numjobs").expect("has a default"))),
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
