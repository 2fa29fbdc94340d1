//! filebench's personalities, written as fsbench's own model: the file sets, threads and
//! flowops, and the defaults, that filebench's shipped personalities state (fileserver,
//! varmail, webserver, webproxy, oltp, videoserver). `nfiles`, `nthreads`, `filesize` and
//! `runtime` scale them as filebench's variables of those names do.

use super::model::{Fileset, Flowop, Mode, Model, Num, Op, Process, Thread};

/// What the options set; `None`: the personality's default.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Scale {
    pub(super) nfiles: Option<u64>,
    pub(super) nthreads: Option<u32>,
    pub(super) filesize: Option<u64>,
    pub(super) runtime: Option<u64>,
}

pub(super) const MIB: u64 = 1 << 20;
pub(super) const KIB: u64 = 1 << 10;

/// A file set with filebench's default directory spread.
pub(super) fn set(name: &str, entries: u64, size: Num, dirwidth: u64, prealloc: u8) -> Fileset {
    Fileset {
        name: name.into(),
        single: false,
        entries,
        leafdirs: 0,
        size,
        dirwidth,
        dirgamma: 1500,
        prealloc,
        readonly: false,
        writeonly: false,
        paralloc: false,
    }
}

/// A flowop on slot `fd` (0: none given) of set `fileset`.
pub(super) fn op(op: Op, name: &str, fileset: Option<usize>, fd: u32) -> Flowop {
    Flowop {
        fileset,
        fd,
        ..Flowop::new(op, name)
    }
}

pub(super) fn sized(mut f: Flowop, iosize: u64) -> Flowop {
    f.iosize = Some(Num::Fixed(iosize));
    f
}

fn one_process(
    name: &str,
    thread: &str,
    instances: u32,
    memsize: u64,
    flowops: Vec<Flowop>,
) -> Process {
    Process {
        name: name.into(),
        instances: 1,
        nice: 0,
        threads: vec![Thread {
            name: thread.into(),
            instances,
            memsize,
            flowops,
        }],
    }
}

pub(super) fn gamma(mean: u64) -> Num {
    Num::Gamma {
        mean: mean as f64,
        gamma: 1.5,
    }
}

/// The built-in personalities: name, what it models, its defaults (nfiles, nthreads,
/// filesize, runtime).
pub(super) const BUILT_IN: &[(&str, &str)] = &[
    (
        "fileserver",
        "a file server: create, write, append, read whole files, delete, stat",
    ),
    (
        "varmail",
        "a mail server: create, append and fsync, read whole, delete in one directory",
    ),
    (
        "webserver",
        "a web server: ten whole-file reads of a read-only set, one log append",
    ),
    (
        "webproxy",
        "a web proxy cache: delete, create and append, five whole-file reads",
    ),
    (
        "oltp",
        "a database: log writer, database writers, readers; 2 KiB random I/O, O_SYNC writes",
    ),
    (
        "videoserver",
        "a video server: one writer replacing large files, readers streaming at a capped rate",
    ),
];

/// filebench's personality called `name`, scaled: one function a personality, each its
/// model's data.
pub(super) fn personality(name: &str, s: &Scale) -> Option<Model> {
    let make: fn(&Scale) -> Model = match name {
        "fileserver" => fileserver,
        "varmail" => varmail,
        "webserver" => webserver,
        "webproxy" => webproxy,
        "oltp" => oltp,
        "videoserver" => videoserver,
        _ => return None,
    };
    Some(make(s))
}

/// One process of one thread definition, as most of filebench's personalities.
fn single(
    s: &Scale,
    sets: Vec<Fileset>,
    names: (&str, &str),
    threads: u32,
    flowops: Vec<Flowop>,
) -> Model {
    Model {
        filesets: sets,
        processes: vec![one_process(names.0, names.1, threads, 10 * MIB, flowops)],
        runtime: s.runtime.unwrap_or(60),
        mode: Mode::Timeout,
        eventrate: 0,
    }
}

fn fileserver(s: &Scale) -> Model {
    let sets = vec![set(
        "bigfileset",
        s.nfiles.unwrap_or(10_000),
        gamma(s.filesize.unwrap_or(128 * KIB)),
        20,
        80,
    )];
    let b = Some(0);
    let flowops = vec![
        op(Op::Createfile, "createfile1", b, 1),
        Flowop {
            srcfd: 1,
            ..sized(op(Op::Writewholefile, "wrtfile1", None, 1), MIB)
        },
        op(Op::Closefile, "closefile1", None, 1),
        op(Op::Openfile, "openfile1", b, 1),
        sized(op(Op::Appendfilerand, "appendfilerand1", None, 1), 16 * KIB),
        op(Op::Closefile, "closefile2", None, 1),
        op(Op::Openfile, "openfile2", b, 1),
        sized(op(Op::Readwholefile, "readfile1", None, 1), MIB),
        op(Op::Closefile, "closefile3", None, 1),
        op(Op::Deletefile, "deletefile1", b, 0),
        op(Op::Statfile, "statfile1", b, 0),
    ];
    let threads = s.nthreads.unwrap_or(50);
    single(
        s,
        sets,
        ("filereader", "filereaderthread"),
        threads,
        flowops,
    )
}

fn varmail(s: &Scale) -> Model {
    let sets = vec![set(
        "bigfileset",
        s.nfiles.unwrap_or(1000),
        gamma(s.filesize.unwrap_or(16 * KIB)),
        1_000_000,
        80,
    )];
    let b = Some(0);
    let mut flowops = vec![
        op(Op::Deletefile, "deletefile1", b, 0),
        op(Op::Createfile, "createfile2", b, 1),
        sized(op(Op::Appendfilerand, "appendfilerand2", None, 1), 16 * KIB),
        op(Op::Fsync, "fsyncfile2", None, 1),
        op(Op::Closefile, "closefile2", None, 1),
    ];
    for (open, read, append) in [("3", "3", true), ("4", "4", false)] {
        flowops.push(op(Op::Openfile, &format!("openfile{open}"), b, 1));
        flowops.push(sized(
            op(Op::Readwholefile, &format!("readfile{read}"), None, 1),
            MIB,
        ));
        if append {
            flowops.push(sized(
                op(Op::Appendfilerand, "appendfilerand3", None, 1),
                16 * KIB,
            ));
            flowops.push(op(Op::Fsync, "fsyncfile3", None, 1));
        }
        flowops.push(op(Op::Closefile, &format!("closefile{open}"), None, 1));
    }
    let threads = s.nthreads.unwrap_or(16);
    single(
        s,
        sets,
        ("filereader", "filereaderthread"),
        threads,
        flowops,
    )
}

fn webserver(s: &Scale) -> Model {
    let size = gamma(s.filesize.unwrap_or(16 * KIB));
    let sets = vec![
        Fileset {
            readonly: true,
            ..set("bigfileset", s.nfiles.unwrap_or(1000), size, 20, 100)
        },
        set("logfiles", 1, size, 20, 100),
    ];
    let mut flowops = Vec::new();
    for i in 1..=10 {
        flowops.push(op(Op::Openfile, &format!("openfile{i}"), Some(0), 1));
        flowops.push(sized(
            op(Op::Readwholefile, &format!("readfile{i}"), None, 1),
            MIB,
        ));
        flowops.push(op(Op::Closefile, &format!("closefile{i}"), None, 1));
    }
    flowops.push(sized(
        op(Op::Appendfilerand, "appendlog", Some(1), 2),
        16 * KIB,
    ));
    let threads = s.nthreads.unwrap_or(100);
    single(
        s,
        sets,
        ("filereader", "filereaderthread"),
        threads,
        flowops,
    )
}

fn webproxy(s: &Scale) -> Model {
    let sets = vec![set(
        "bigfileset",
        s.nfiles.unwrap_or(10_000),
        Num::Fixed(s.filesize.unwrap_or(16 * KIB)),
        1_000_000,
        80,
    )];
    let b = Some(0);
    let mut flowops = vec![
        op(Op::Deletefile, "deletefile1", b, 0),
        op(Op::Createfile, "createfile1", b, 1),
        sized(op(Op::Appendfilerand, "appendfilerand1", None, 1), 16 * KIB),
        op(Op::Closefile, "closefile1", None, 1),
    ];
    for i in 2..=6 {
        flowops.push(op(Op::Openfile, &format!("openfile{i}"), b, 1));
        flowops.push(sized(
            op(Op::Readwholefile, &format!("readfile{i}"), None, 1),
            MIB,
        ));
        flowops.push(op(Op::Closefile, &format!("closefile{i}"), None, 1));
    }
    flowops.push(op(Op::Opslimit, "limit", None, 0));
    let threads = s.nthreads.unwrap_or(100);
    single(s, sets, ("proxycache", "proxycache"), threads, flowops)
}

/// A log writer, database writers and readers ("shadows") on ten data files and a log:
/// 2 KiB random reads, O_SYNC asynchronous 2 KiB writes, 256 KiB log writes, paced by
/// semaphores so the writers keep up with the readers.
fn oltp(s: &Scale) -> Model {
    let size = Num::Fixed(s.filesize.unwrap_or(10 * MIB));
    let sets = vec![
        set("datafiles", s.nfiles.unwrap_or(10), size, 1024, 100),
        set("logfile", 1, Num::Fixed(10 * MIB), 1024, 100),
    ];
    let (data, log) = (Some(0), Some(1));
    let processes = vec![
        processes_of_one_thread(
            "lgwr",
            1,
            vec![
                oltp_write("lg-write", log, 256 * KIB),
                op(Op::Aiowait, "lg-aiowait", None, 0),
                sem_block("lg-block", 3200, 1000),
            ],
        ),
        processes_of_one_thread(
            "dbwr",
            10,
            vec![
                Flowop {
                    iters: 100,
                    opennext: true,
                    ..oltp_write("dbwrite-a", data, 2 * KIB)
                },
                hog("dbwr-hog", 10_000),
                sem_block("dbwr-block", 1000, 2000),
                op(Op::Aiowait, "dbwr-aiowait", None, 0),
            ],
        ),
        processes_of_one_thread(
            "shadow",
            s.nthreads.unwrap_or(200),
            vec![
                Flowop {
                    random: true,
                    opennext: true,
                    ..sized(op(Op::Read, "shadowread", data, 0), 2 * KIB)
                },
                hog("shadowhog", 200_000),
                sem_post("shadow-post-lg", "lg-block"),
                sem_post("shadow-post-dbwr", "dbwr-block"),
                op(Op::Eventlimit, "random-rate", None, 0),
            ],
        ),
    ];
    Model {
        filesets: sets,
        processes,
        runtime: s.runtime.unwrap_or(60),
        mode: Mode::Timeout,
        eventrate: 0,
    }
}

/// oltp's O_SYNC asynchronous random write.
fn oltp_write(name: &str, set: Option<usize>, iosize: u64) -> Flowop {
    Flowop {
        random: true,
        dsync: true,
        ..sized(op(Op::Aiowrite, name, set, 0), iosize)
    }
}

fn sem_block(name: &str, value: u64, highwater: u64) -> Flowop {
    Flowop {
        value: Some(Num::Fixed(value)),
        highwater,
        ..op(Op::Semblock, name, None, 0)
    }
}

fn sem_post(name: &str, target: &str) -> Flowop {
    Flowop {
        value: Some(Num::Fixed(1)),
        target: Some(target.into()),
        blocking: true,
        ..op(Op::Sempost, name, None, 0)
    }
}

fn hog(name: &str, loops: u64) -> Flowop {
    Flowop {
        value: Some(Num::Fixed(loops)),
        ..op(Op::Hog, name, None, 0)
    }
}

/// `instances` processes of one thread each, as oltp's.
fn processes_of_one_thread(name: &str, instances: u32, flowops: Vec<Flowop>) -> Process {
    Process {
        name: name.into(),
        instances,
        nice: 0,
        threads: vec![Thread {
            name: name.into(),
            instances: 1,
            memsize: MIB,
            flowops,
        }],
    }
}

/// One writer deleting and writing anew the passive videos, ten seconds apart, and readers
/// streaming the active ones in 256 KiB reads, capped at 96 MiB/s in all.
fn videoserver(s: &Scale) -> Model {
    let size = Num::Fixed(s.filesize.unwrap_or(10 << 30));
    let active = s.nfiles.unwrap_or(32);
    let passive = (active * 194).div_ceil(32);
    let sets = vec![
        Fileset {
            paralloc: true,
            ..set("activevids", active, size, 4, 100)
        },
        Fileset {
            paralloc: true,
            ..set("passivevids", passive, size, 20, 50)
        },
    ];
    let writer = vec![
        op(Op::Deletefile, "vidremover", Some(1), 0),
        op(Op::Createfile, "wrtopen", Some(1), 1),
        Flowop {
            srcfd: 1,
            ..sized(op(Op::Writewholefile, "newvid", None, 1), MIB)
        },
        op(Op::Closefile, "wrtclose", None, 1),
        Flowop {
            value: Some(Num::Fixed(10)),
            ..op(Op::Delay, "replaceinterval", None, 0)
        },
    ];
    let readers = vec![
        sized(op(Op::Read, "vidreader", Some(0), 0), 256 * KIB),
        Flowop {
            target: Some("vidreader".into()),
            ..op(Op::Bwlimit, "serverlimit", None, 0)
        },
    ];
    Model {
        filesets: sets,
        processes: vec![
            one_process("vidwriter", "vidwriter", 1, 10 * MIB, writer),
            one_process(
                "vidreaders",
                "vidreaders",
                s.nthreads.unwrap_or(48),
                10 * MIB,
                readers,
            ),
        ],
        runtime: s.runtime.unwrap_or(60),
        mode: Mode::Timeout,
        eventrate: 96,
    }
}
