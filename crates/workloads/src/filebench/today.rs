//! Personalities of applications people run today, in the same form as filebench's: what
//! each does to the filesystem is stated in `docs/pending/filebench.md` with where it comes
//! from (the application's documentation, or a capture of it here). Three flowops of
//! fsbench's own serve them: renamefile, setattr and syncfs.

use super::model::{Fileset, Flowop, Mode, Model, Num, Op, Process, Thread};
use super::personalities::{KIB, MIB, Scale, gamma, op, set, sized};

/// Name and what it models.
pub(super) const TODAY: &[(&str, &str)] = &[
    (
        "maildir",
        "Maildir delivery (tmp, fsync, rename to new) and IMAP reads (new to cur, read, expunge)",
    ),
    (
        "git",
        "a git checkout of a large tree (write, fstat each file), then git status (lstat each)",
    ),
    (
        "layer-unpack",
        "a container image layer unpacked: small files with mode, owner and times, whiteouts, one syncfs",
    ),
    (
        "sqlite-wal",
        "SQLite in WAL mode: page reads, WAL writes and fsync per commit, checkpoints with fsync",
    ),
    (
        "objectstore",
        "an object store: PUT as write-temp-fsync-rename, GET as open-read-close, in many directories",
    ),
    (
        "build",
        "a build: sources and headers read, objects written, a link reading each object",
    ),
];

fn value(mut f: Flowop, v: u64) -> Flowop {
    f.value = Some(Num::Fixed(v));
    f
}

fn target(mut f: Flowop, t: &str) -> Flowop {
    f.target = Some(t.into());
    f
}

/// A counting gate: `name` waits for `n` posts of a `post` (sempost) flowop.
fn gate(name: &str, n: u64) -> Flowop {
    Flowop {
        highwater: n.max(1),
        ..value(op(Op::Semblock, name, None, 0), n.max(1))
    }
}

fn post(name: &str, gate: &str) -> Flowop {
    target(value(op(Op::Sempost, name, None, 0), 1), gate)
}

/// Ends its thread after `n` runs of flowop `of`.
fn after(name: &str, of: &str, n: u64) -> Flowop {
    target(value(op(Op::Finishoncount, name, None, 0), n.max(1)), of)
}

fn process(name: &str, threads: Vec<(&str, u32, Vec<Flowop>)>) -> Process {
    Process {
        name: name.into(),
        instances: 1,
        nice: 0,
        threads: (threads.into_iter())
            .map(|(t, instances, flowops)| Thread {
                name: t.into(),
                instances,
                memsize: 10 * MIB,
                flowops,
            })
            .collect(),
    }
}

fn model(filesets: Vec<Fileset>, processes: Vec<Process>, runtime: u64, mode: Mode) -> Model {
    Model {
        filesets,
        processes,
        runtime,
        mode,
        eventrate: 0,
    }
}

/// The personality called `name`, scaled: one function a personality, each its model's data.
pub(super) fn personality(name: &str, s: &Scale) -> Option<Model> {
    let make: fn(&Scale) -> Model = match name {
        "maildir" => maildir,
        "git" => git,
        "layer-unpack" => layer_unpack,
        "sqlite-wal" => sqlite_wal,
        "objectstore" => objectstore,
        "build" => build,
        _ => return None,
    };
    Some(make(s))
}

/// The threads asked for, else the personality's own default.
fn threads(s: &Scale, default: u32) -> u32 {
    s.nthreads.unwrap_or(default)
}

fn maildir(s: &Scale) -> Model {
    let n = s.nfiles.unwrap_or(10_000);
    let size = gamma(s.filesize.unwrap_or(32 * KIB));
    let sets = vec![
        set("tmp", n, size, 1_000_000, 0),
        set("new", n, size, 1_000_000, 0),
        set("cur", n, size, 1_000_000, 50),
    ];
    let deliver = vec![
        op(Op::Createfile, "deliver-create", Some(0), 1),
        Flowop {
            srcfd: 1,
            ..sized(op(Op::Writewholefile, "deliver-write", None, 1), 64 * KIB)
        },
        op(Op::Fsync, "deliver-fsync", None, 1),
        op(Op::Closefile, "deliver-close", None, 1),
        target(op(Op::Renamefile, "deliver-rename", None, 1), "new"),
    ];
    let imap = vec![
        target(op(Op::Renamefile, "imap-seen", Some(1), 0), "cur"),
        op(Op::Statfile, "imap-stat", Some(2), 0),
        op(Op::Openfile, "imap-open", Some(2), 1),
        sized(op(Op::Readwholefile, "imap-read", None, 1), MIB),
        op(Op::Closefile, "imap-close", None, 1),
        op(Op::Deletefile, "imap-expunge", Some(2), 0),
    ];
    let t = threads(s, 8);
    let procs = vec![
        process("lmtp", vec![("deliver", (t / 2).max(1), deliver)]),
        process("imap", vec![("imap", t, imap)]),
    ];
    model(sets, procs, s.runtime.unwrap_or(60), Mode::Timeout)
}

fn git(s: &Scale) -> Model {
    let n = s.nfiles.unwrap_or(20_000);
    let t = u64::from(threads(s, 4));
    let sets = vec![set(
        "worktree",
        n,
        gamma(s.filesize.unwrap_or(12 * KIB)),
        16,
        0,
    )];
    let checkout = vec![
        op(Op::Createfile, "checkout-create", Some(0), 1),
        Flowop {
            srcfd: 1,
            ..op(Op::Writewholefile, "checkout-write", None, 1)
        },
        op(Op::Statfile, "checkout-fstat", None, 1),
        op(Op::Closefile, "checkout-close", None, 1),
        post("checkout-indexed", "status-wait"),
        after("checkout-done", "checkout-create", n),
    ];
    let status = vec![
        gate("status-wait", n),
        Flowop {
            iters: n / t,
            ..op(Op::Statfile, "status-lstat", Some(0), 0)
        },
        after("status-done", "status-lstat", n / t),
    ];
    let procs = vec![
        process("checkout", vec![("checkout", 1, checkout)]),
        process("status", vec![("status", t as u32, status)]),
    ];
    model(sets, procs, s.runtime.unwrap_or(600), Mode::Alldone)
}

fn layer_unpack(s: &Scale) -> Model {
    let n = s.nfiles.unwrap_or(20_000);
    let size = gamma(s.filesize.unwrap_or(8 * KIB));
    let sets = vec![
        set("layer", n, size, 10, 0),
        Fileset {
            readonly: true,
            ..set("lower", n / 20 + 1, size, 10, 100)
        },
    ];
    let unpack = vec![
        op(Op::Createfile, "unpack-create", Some(0), 1),
        Flowop {
            srcfd: 1,
            ..sized(op(Op::Writewholefile, "unpack-write", None, 1), 32 * KIB)
        },
        op(Op::Setattr, "unpack-setattr", None, 1),
        op(Op::Closefile, "unpack-close", None, 1),
        post("unpack-whiteout", "whiteout-wait"),
        post("unpack-layer", "layer-wait"),
        after("unpack-done", "unpack-create", n),
    ];
    let whiteout = vec![
        gate("whiteout-wait", 20),
        op(Op::Deletefile, "whiteout", Some(1), 0),
        after("whiteout-done", "whiteout", n / 20),
    ];
    let sync = vec![
        gate("layer-wait", n),
        op(Op::Syncfs, "layer-syncfs", None, 0),
        after("layer-done", "layer-syncfs", 1),
    ];
    let procs = vec![process(
        "unpack",
        vec![
            ("unpack", 1, unpack),
            ("whiteout", 1, whiteout),
            ("sync", 1, sync),
        ],
    )];
    model(sets, procs, s.runtime.unwrap_or(600), Mode::Alldone)
}

fn sqlite_wal(s: &Scale) -> Model {
    let db_size = s.filesize.unwrap_or(256 * MIB);
    let sets = vec![
        Fileset {
            single: true,
            dirwidth: 10,
            dirgamma: 0,
            ..set("db", 1, Num::Fixed(db_size), 10, 100)
        },
        Fileset {
            single: true,
            dirwidth: 10,
            dirgamma: 0,
            ..set("wal", 1, Num::Fixed(4 * MIB), 10, 100)
        },
    ];
    let page = |name: &str, o: Op, set, fd| Flowop {
        random: true,
        ..sized(op(o, name, set, fd), 4 * KIB)
    };
    let reader = vec![Flowop {
        iters: 4,
        ..page("reader-page", Op::Read, Some(0), 1)
    }];
    let writer = vec![
        Flowop {
            iters: 2,
            ..page("writer-page", Op::Read, Some(0), 1)
        },
        Flowop {
            iters: 3,
            ..page("writer-wal", Op::Write, Some(1), 2)
        },
        op(Op::Fsync, "writer-commit", None, 2),
        post("writer-frames", "checkpoint-wait"),
    ];
    let checkpoint = vec![
        gate("checkpoint-wait", 333),
        Flowop {
            iters: 500,
            ..page("checkpoint-page", Op::Write, Some(0), 1)
        },
        op(Op::Fsync, "checkpoint-fsync", None, 1),
    ];
    let procs = vec![process(
        "sqlite",
        vec![
            ("reader", threads(s, 4), reader),
            ("writer", 1, writer),
            ("checkpoint", 1, checkpoint),
        ],
    )];
    model(sets, procs, s.runtime.unwrap_or(60), Mode::Timeout)
}

fn objectstore(s: &Scale) -> Model {
    let n = s.nfiles.unwrap_or(100_000);
    let t = threads(s, 8);
    let size = gamma(s.filesize.unwrap_or(64 * KIB));
    let sets = vec![
        set("tmp", u64::from(t) * 4, size, 1_000_000, 0),
        set("objects", n, size, 64, 50),
    ];
    let put = vec![
        op(Op::Createfile, "put-create", Some(0), 1),
        Flowop {
            srcfd: 1,
            ..sized(op(Op::Writewholefile, "put-write", None, 1), 64 * KIB)
        },
        op(Op::Fsync, "put-fsync", None, 1),
        op(Op::Closefile, "put-close", None, 1),
        target(op(Op::Renamefile, "put-rename", None, 1), "objects"),
        op(Op::Deletefile, "delete", Some(1), 0),
    ];
    let get = vec![
        op(Op::Openfile, "get-open", Some(1), 1),
        sized(op(Op::Readwholefile, "get-read", None, 1), MIB),
        op(Op::Closefile, "get-close", None, 1),
    ];
    let procs = vec![process(
        "server",
        vec![("put", (t / 2).max(1), put), ("get", t, get)],
    )];
    model(sets, procs, s.runtime.unwrap_or(60), Mode::Timeout)
}

fn build(s: &Scale) -> Model {
    let n = s.nfiles.unwrap_or(2000);
    let t = threads(s, 2);
    let size = gamma(s.filesize.unwrap_or(8 * KIB));
    let sets = vec![
        Fileset {
            readonly: true,
            ..set("src", n, size, 20, 100)
        },
        Fileset {
            readonly: true,
            ..set("include", n / 4 + 1, gamma(4 * KIB), 50, 100)
        },
        set("obj", n, gamma(16 * KIB), 20, 0),
        Fileset {
            single: true,
            dirwidth: 10,
            dirgamma: 0,
            ..set("bin", 1, Num::Fixed(0), 10, 100)
        },
    ];
    let mut cc = vec![
        op(Op::Openfile, "cc-open-src", Some(0), 1),
        sized(op(Op::Readwholefile, "cc-read-src", None, 1), 64 * KIB),
        op(Op::Closefile, "cc-close-src", None, 1),
        Flowop {
            iters: 10,
            ..op(Op::Statfile, "cc-stat-include", Some(1), 0)
        },
    ];
    for i in 1..=3 {
        cc.push(op(Op::Openfile, &format!("cc-open-include{i}"), Some(1), 2));
        cc.push(sized(
            op(Op::Readwholefile, &format!("cc-read-include{i}"), None, 2),
            64 * KIB,
        ));
        cc.push(op(Op::Closefile, &format!("cc-close-include{i}"), None, 2));
    }
    cc.extend([
        op(Op::Createfile, "cc-create-obj", Some(2), 3),
        Flowop {
            srcfd: 3,
            ..sized(op(Op::Writewholefile, "cc-write-obj", None, 3), 64 * KIB)
        },
        op(Op::Closefile, "cc-close-obj", None, 3),
        post("cc-done-obj", "ld-wait"),
        after("cc-done", "cc-create-obj", n / u64::from(t)),
    ]);
    let ld = vec![
        gate("ld-wait", 1),
        op(Op::Openfile, "ld-open-obj", Some(2), 1),
        sized(op(Op::Readwholefile, "ld-read-obj", None, 1), 64 * KIB),
        op(Op::Closefile, "ld-close-obj", None, 1),
        sized(op(Op::Appendfile, "ld-write", Some(3), 2), 16 * KIB),
        after("ld-done", "ld-open-obj", n / u64::from(t) * u64::from(t)),
    ];
    let procs = vec![
        process("cc", vec![("cc", t, cc)]),
        process("ld", vec![("ld", 1, ld)]),
    ];
    model(sets, procs, s.runtime.unwrap_or(600), Mode::Alldone)
}

#[cfg(test)]
mod tests {
    use super::super::params::FilebenchParams;
    use crate::WorkloadParams;

    #[test]
    fn every_personality_of_today_is_valid() {
        for (name, _) in super::TODAY {
            FilebenchParams::built_in(name)
                .unwrap()
                .validate()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
