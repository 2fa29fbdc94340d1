//! A filebench workload as fsbench runs it: file sets, processes of threads of flowops, and
//! how the run ends. A workload file is read into it ([`super::parse`]), the built-in
//! personalities are written in it ([`super::personalities`]), and it is written back out as
//! a workload file ([`super::dump`]).

use serde::{Deserialize, Serialize};

/// A number that may be drawn anew at each use, as filebench's `cvar` variables are.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Num {
    Fixed(u64),
    /// filebench's `cvar-gamma`: shape `gamma`, scale `mean / gamma`.
    Gamma {
        mean: f64,
        gamma: f64,
    },
    /// filebench's `cvar-uniform`: uniform in [lower, upper).
    Uniform {
        lower: f64,
        upper: f64,
    },
}

impl Num {
    /// The value, or the distribution's mean.
    pub fn mean(&self) -> f64 {
        match *self {
            Num::Fixed(n) => n as f64,
            Num::Gamma { mean, .. } => mean,
            Num::Uniform { lower, upper } => (lower + upper) / 2.0,
        }
    }

    /// A value a little above most draws (the mean for a fixed value), for space estimates.
    pub fn high(&self) -> u64 {
        match *self {
            Num::Fixed(n) => n,
            Num::Gamma { mean, gamma } => (mean * (1.0 + 3.0 / gamma.sqrt())) as u64,
            Num::Uniform { upper, .. } => upper as u64,
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Num::Fixed(0)
    }
}

/// A `define fileset` (or `define file`: one entry, directly in its own directory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fileset {
    pub name: String,
    /// `define file` rather than `define fileset`.
    #[serde(default)]
    pub single: bool,
    pub entries: u64,
    /// Empty directories (made and removed by makedir and removedir), placed as files are.
    #[serde(default)]
    pub leafdirs: u64,
    pub size: Num,
    /// Mean files per directory.
    pub dirwidth: u64,
    /// The directories' width and depth spread (gamma shape × 1000; 0: every directory as wide
    /// as the mean).
    pub dirgamma: u32,
    /// Percentage of the entries made before the run.
    pub prealloc: u8,
    #[serde(default)]
    pub readonly: bool,
    #[serde(default)]
    pub writeonly: bool,
    /// Files made by up to 32 threads at once.
    #[serde(default)]
    pub paralloc: bool,
}

/// One flowop type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    Aiowrite,
    Aiowait,
    Openfile,
    Createfile,
    Closefile,
    Deletefile,
    Statfile,
    Fsync,
    Fsyncset,
    Readwholefile,
    Writewholefile,
    Appendfile,
    Appendfilerand,
    /// Makes a leaf directory of the set that does not exist.
    Makedir,
    /// Removes a leaf directory of the set that exists.
    Removedir,
    /// Lists one of the set's directories (open, read every entry, close).
    Listdir,
    Hog,
    Delay,
    Block,
    Wakeup,
    Semblock,
    Sempost,
    Eventlimit,
    Bwlimit,
    Iopslimit,
    Opslimit,
    Finishoncount,
    Finishonbytes,
    /// fsbench's: renames a file (its slot's, or one of its set) into a free slot of the
    /// set its `target` names.
    Renamefile,
    /// fsbench's: chmod, chown and utimens of a file (its slot's, or one of its set).
    Setattr,
    /// fsbench's: one syncfs(2) of the filesystem (containerd's `sync_fs` after a layer).
    Syncfs,
    /// A composite flowop (`define flowop`): the `body` flowops after it, `iters` times.
    Composite,
}

/// How filebench counts a flowop in its IO Summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// An operation on files: in the summary's ops, bytes and latency.
    Io,
    /// An asynchronous write or its wait: in the summary too.
    Aio,
    /// Synchronisation and pacing: in the breakdown only.
    Other,
}

impl Op {
    pub const ALL: [Op; 34] = [
        Op::Read,
        Op::Write,
        Op::Aiowrite,
        Op::Aiowait,
        Op::Openfile,
        Op::Createfile,
        Op::Closefile,
        Op::Deletefile,
        Op::Statfile,
        Op::Fsync,
        Op::Fsyncset,
        Op::Readwholefile,
        Op::Writewholefile,
        Op::Appendfile,
        Op::Appendfilerand,
        Op::Makedir,
        Op::Removedir,
        Op::Listdir,
        Op::Hog,
        Op::Delay,
        Op::Block,
        Op::Wakeup,
        Op::Semblock,
        Op::Sempost,
        Op::Eventlimit,
        Op::Bwlimit,
        Op::Iopslimit,
        Op::Opslimit,
        Op::Finishoncount,
        Op::Finishonbytes,
        Op::Renamefile,
        Op::Setattr,
        Op::Syncfs,
        Op::Composite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Aiowrite => "aiowrite",
            Op::Aiowait => "aiowait",
            Op::Openfile => "openfile",
            Op::Createfile => "createfile",
            Op::Closefile => "closefile",
            Op::Deletefile => "deletefile",
            Op::Statfile => "statfile",
            Op::Fsync => "fsync",
            Op::Fsyncset => "fsyncset",
            Op::Readwholefile => "readwholefile",
            Op::Writewholefile => "writewholefile",
            Op::Appendfile => "appendfile",
            Op::Appendfilerand => "appendfilerand",
            Op::Makedir => "makedir",
            Op::Removedir => "removedir",
            Op::Listdir => "listdir",
            Op::Hog => "hog",
            Op::Delay => "delay",
            Op::Block => "block",
            Op::Wakeup => "wakeup",
            Op::Semblock => "semblock",
            Op::Sempost => "sempost",
            Op::Eventlimit => "eventlimit",
            Op::Bwlimit => "bwlimit",
            Op::Iopslimit => "iopslimit",
            Op::Opslimit => "opslimit",
            Op::Finishoncount => "finishoncount",
            Op::Finishonbytes => "finishonbytes",
            Op::Renamefile => "renamefile",
            Op::Setattr => "setattr",
            Op::Syncfs => "syncfs",
            Op::Composite => "composite",
        }
    }

    pub fn named(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }

    pub fn counted(self) -> Counted {
        match self {
            Op::Aiowrite | Op::Aiowait => Counted::Aio,
            Op::Hog
            | Op::Delay
            | Op::Block
            | Op::Wakeup
            | Op::Semblock
            | Op::Sempost
            | Op::Eventlimit
            | Op::Bwlimit
            | Op::Iopslimit
            | Op::Opslimit
            | Op::Finishoncount
            | Op::Finishonbytes
            | Op::Composite => Counted::Other,
            _ => Counted::Io,
        }
    }

    /// Counted as a read (`rd` in the summary).
    pub fn reads(self) -> bool {
        matches!(self, Op::Read | Op::Readwholefile)
    }

    /// Counted as a write (`wr` in the summary).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Op::Write | Op::Aiowrite | Op::Appendfile | Op::Appendfilerand | Op::Writewholefile
        )
    }

    /// Not one of filebench's own: fsbench's personalities of today need them.
    pub fn is_extension(self) -> bool {
        matches!(self, Op::Renamefile | Op::Setattr | Op::Syncfs)
    }
}

/// One flowop as the file defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flowop {
    pub op: Op,
    pub name: String,
    /// The file set's index in [`Model::filesets`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fileset: Option<usize>,
    /// The thread's descriptor slot (0: the default one).
    #[serde(default)]
    pub fd: u32,
    /// The slot whose file gives `writewholefile` its size.
    #[serde(default)]
    pub srcfd: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iosize: Option<Num>,
    /// Runs of the flowop each time the thread reaches it.
    pub iters: u64,
    #[serde(default)]
    pub random: bool,
    /// Files opened O_SYNC.
    #[serde(default)]
    pub dsync: bool,
    #[serde(default)]
    pub directio: bool,
    /// `opennext`: a new descriptor slot at each run, cycling through 128.
    #[serde(default)]
    pub opennext: bool,
    /// Random offsets below this many bytes (0: the file's size).
    #[serde(default)]
    pub workingset: u64,
    /// The count, bytes, seconds or loops the flowop is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Num>,
    /// The flowop another one acts on (sempost, wakeup, the limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default)]
    pub blocking: bool,
    #[serde(default)]
    pub highwater: u64,
    /// `noreadahead`: POSIX_FADV_RANDOM on the files it opens.
    #[serde(default)]
    pub noreadahead: bool,
    /// `indexed`: the file picked by this index rather than in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<Num>,
    /// A composite's flowops: how many of those after it (theirs included) it runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub body: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Flowop {
    pub fn new(op: Op, name: &str) -> Flowop {
        Flowop {
            op,
            name: name.to_string(),
            fileset: None,
            fd: 0,
            srcfd: 0,
            iosize: None,
            iters: 1,
            random: false,
            dsync: false,
            directio: false,
            opennext: false,
            workingset: 0,
            value: None,
            target: None,
            blocking: false,
            highwater: 0,
            noreadahead: false,
            index: None,
            body: 0,
        }
    }
}

/// A `thread` of a process: `instances` threads running its flowops in a loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    pub name: String,
    pub instances: u32,
    /// filebench's thread memory: the largest I/O it may do.
    pub memsize: u64,
    pub flowops: Vec<Flowop>,
}

/// A `define process`: `instances` processes, each running every thread of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub name: String,
    pub instances: u32,
    #[serde(default)]
    pub nice: i32,
    pub threads: Vec<Thread>,
}

/// What ends the run (`set mode quit ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// After the run's seconds.
    #[default]
    Timeout,
    /// When the first thread is done (its finishoncount or finishonbytes is reached).
    Firstdone,
    /// When every thread is done.
    Alldone,
}

/// A whole workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub filesets: Vec<Fileset>,
    pub processes: Vec<Process>,
    /// The run's seconds (`run N`); 0 with Firstdone or Alldone: until done.
    pub runtime: u64,
    #[serde(default)]
    pub mode: Mode,
    /// Events per second for the eventlimit and limit flowops (`eventgen rate=N`).
    #[serde(default)]
    pub eventrate: u64,
}

impl Model {
    /// Every flowop with its thread's instance count and its process's.
    pub fn flowops(&self) -> impl Iterator<Item = (&Process, &Thread, &Flowop)> {
        self.processes.iter().flat_map(|p| {
            p.threads
                .iter()
                .flat_map(move |t| t.flowops.iter().map(move |f| (p, t, f)))
        })
    }

    /// Threads in all, over every process instance.
    pub fn total_threads(&self) -> u64 {
        (self.processes.iter())
            .map(|p| {
                let per: u64 = p.threads.iter().map(|t| u64::from(t.instances)).sum();
                per * u64::from(p.instances)
            })
            .sum()
    }

    /// Processes in all.
    pub fn total_processes(&self) -> u64 {
        self.processes.iter().map(|p| u64::from(p.instances)).sum()
    }
}
