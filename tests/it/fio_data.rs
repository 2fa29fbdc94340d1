//! fio's data-path options in job files: `sync=`, `verify_dump`,
//! `fill_device`, the dedupe modes, the `e4defrag` engine and io_uring's reaping, each run
//! through `fsbench fio` and, where fio's result is deterministic, compared with fio 3.33 on
//! the same job file.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::fio_engines::{fio_traced, traced};

/// `job` written as `job.fio` in `state`, its path.
fn job_file(state: &Path, job: &str) -> PathBuf {
    let jobfile = state.join("job.fio");
    std::fs::write(&jobfile, job).unwrap();
    jobfile
}

/// fio on `jobfile` in `dir`, its JSON (fio prints notes before it) and its output.
fn fio_json(dir: &Path, jobfile: &Path) -> (serde_json::Value, String) {
    let out = run(Command::new("fio")
        .current_dir(dir)
        .arg("--output-format=json")
        .arg(jobfile));
    let all = text(&out.stdout) + &text(&out.stderr);
    let stdout = text(&out.stdout);
    let doc = stdout
        .find('{')
        .and_then(|at| serde_json::from_str(&stdout[at..]).ok())
        .unwrap_or(serde_json::Value::Null);
    (doc, all)
}

/// The written bytes of every job of fio's JSON (fsbench's or fio's).
fn written(doc: &serde_json::Value) -> u64 {
    (doc["jobs"].as_array().into_iter().flatten())
        .filter_map(|j| j["write"]["io_bytes"].as_u64())
        .sum()
}

/// The figure `name` of the timed phase of fsbench's document.
fn figure(doc: &serde_json::Value, name: &str) -> Option<f64> {
    (doc["runs"][0]["phases"][1]["figures"].as_array()?.iter())
        .find(|f| f["name"] == name)?["value"]
        .as_f64()
}

/// The flags of the `openat` calls in a strace log that open `data` for the job (not the
/// layout's: those create it write-only).
fn data_opens(log: &str) -> Vec<String> {
    (log.lines())
        .filter(|l| l.contains("openat(") && l.contains("\"data\"") && !l.contains("O_WRONLY"))
        .filter_map(|l| l.split("\"data\", ").nth(1))
        .map(|rest| rest.split([',', ')']).next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn sync_spellings_open_the_files_as_fio_opens_them() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let traced_both = fio_traced("sync= against fio's open flags");
    for (value, flag) in [
        ("1", Some("O_SYNC")),
        ("sync", Some("O_SYNC")),
        ("dsync", Some("O_DSYNC")),
        ("0", None),
        ("none", None),
    ] {
        let job = format!("[s]\nfilename=data\nrw=write\nbs=4k\nsize=64k\nsync={value}\n");
        let jobfile = job_file(state.path(), &job);
        let out = fio_output(state.path(), dir.path(), &jobfile, "json");
        assert!(out.status.success(), "sync={value}: {}", text(&out.stderr));
        assert_eq!(written(&json(&out)), 64 << 10, "sync={value}");
        if !traced_both {
            continue;
        }
        let log = state.path().join("ours.strace");
        let ours = run(traced("trace=openat", &log, env!("CARGO_BIN_EXE_fsbench"))
            .env("FSBENCH_STATE_DIR", state.path())
            .env("XDG_DATA_HOME", test_data_home())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(dir.path())
            .arg(&jobfile));
        assert!(ours.status.success());
        let ours = data_opens(&std::fs::read_to_string(&log).unwrap());
        let fio_dir = tmpfs_tempdir();
        let log = state.path().join("fio.strace");
        run(traced("trace=openat", &log, "fio")
            .current_dir(fio_dir.path())
            .arg("--output=/dev/null")
            .arg(&jobfile));
        let theirs = data_opens(&std::fs::read_to_string(&log).unwrap());
        assert!(
            !ours.is_empty() && !theirs.is_empty(),
            "{ours:?} {theirs:?}"
        );
        for opens in [&ours, &theirs] {
            for flags in opens {
                let has = |f: &str| flags.split('|').any(|x| x == f);
                match flag {
                    Some(f) => assert!(has(f), "sync={value}: {flags}"),
                    None => assert!(!has("O_SYNC") && !has("O_DSYNC"), "{flags}"),
                }
                if flag == Some("O_DSYNC") {
                    assert!(!has("O_SYNC"), "{flags}");
                }
            }
        }
    }
    let jobfile = job_file(state.path(), "[s]\nrw=write\nsize=64k\nsync=2\n");
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("job.fio:4: `sync=2`"));
    assert_nothing_left(dir.path());
}

/// A writer of 64 blocks of 4 KiB at 200 a second, verified at its end, and a job beside it
/// that overwrites block 2 (offset 8192) 100 ms in: between its write and its check.
fn spoiled(verify: &str) -> String {
    format!(
        "[global]\nfilename=data\nbs=4k\nsize=256k\n[writer]\nrw=write\n{verify}\nverify_dump=1\nrate_iops=200\n[spoiler]\nrw=write\noffset=8192\nsize=4096\nstartdelay=100ms\n"
    )
}

/// The names of the files in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn verify_dump_writes_the_wrong_block_where_fio_writes_it_named_as_fio_names_it() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let cwd = tempdir();
    let fails = |job: &str| {
        let jobfile = job_file(state.path(), job);
        let out = run(fsbench(state.path())
            .current_dir(cwd.path())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(dir.path())
            .arg(&jobfile));
        assert!(!out.status.success());
        text(&out.stderr)
    };
    // The header overwritten: fio dumps what it read as `hdr_fail`.
    let err = fails(&spoiled("verify=crc32c"));
    assert!(
        err.contains("hdr_fail data dumped as data.8192.hdr_fail"),
        "{err}"
    );
    assert_eq!(names_in(cwd.path()), ["data.8192.hdr_fail"]);
    let dumped = std::fs::read(cwd.path().join("data.8192.hdr_fail")).unwrap();
    assert_eq!(dumped.len(), 4096);
    assert_ne!(&dumped[..2], &0xaccau16.to_le_bytes(), "the spoiler's data");
    // A pattern: what was read and what the pattern says.
    std::fs::remove_file(cwd.path().join("data.8192.hdr_fail")).unwrap();
    let err = fails(&spoiled("verify_pattern=0xdeadbeef"));
    assert!(
        err.contains("received data dumped as data.8192.received"),
        "{err}"
    );
    assert_eq!(
        names_in(cwd.path()),
        ["data.8192.expected", "data.8192.received"]
    );
    let expected = std::fs::read(cwd.path().join("data.8192.expected")).unwrap();
    assert_eq!(expected.len(), 4096);
    assert!(expected.chunks(4).all(|w| w == [0xde, 0xad, 0xbe, 0xef]));
    let received = std::fs::read(cwd.path().join("data.8192.received")).unwrap();
    assert_ne!(received, expected);
    assert_nothing_left(dir.path());
    if !has_tool("fio") {
        skip("verify_dump's names against fio's: fio is not installed");
        return;
    }
    let fio_dir = tempdir();
    fio_json(
        fio_dir.path(),
        &job_file(state.path(), &spoiled("verify=crc32c")),
    );
    assert!(
        names_in(fio_dir.path()).contains(&"data.8192.hdr_fail".to_string()),
        "{:?}",
        names_in(fio_dir.path())
    );
}

/// A tmpfs of `size` mounted on `dir/small`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let path = dir.join("small");
        std::fs::create_dir(&path).unwrap();
        let options = format!("size={size}");
        let ok = status(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
                .arg(&path),
        );
        assert!(ok.success());
        Tmpfs(path)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        status(Command::new("umount").arg(&self.0));
    }
}

#[test]
fn fill_device_writes_until_the_filesystem_is_full_and_ends_without_error() {
    if !can_run("fill_device on a small tmpfs", &[]) {
        return;
    }
    let (top, state) = (tempdir(), tempdir());
    let small = Tmpfs::mount(top.path(), "8m");
    // Two files of the free space each: the second half of the writes meets ENOSPC.
    let job = "[fill]\nrw=write\nbs=64k\nnrfiles=2\nfill_device=1\n";
    let jobfile = job_file(state.path(), job);
    let out = fio_output(state.path(), &small.0, &jobfile, "json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = written(&json(&out));
    assert!((6 << 20..=8 << 20).contains(&ours), "{ours} bytes");
    // Its description gives no size it does not have; what it wrote is a figure.
    let doc = json(&fio_job_json(state.path(), &small.0, job));
    let described = doc["workload_records"][0]["description"].as_str().unwrap();
    assert!(
        described
            .ends_with("2 file(s) of no set size, psync at depth 1, until the filesystem is full"),
        "{described}"
    );
    // Nor do its exported parameters: no size (null), not a number it never had.
    let params = &doc["suite"]["workload"][0];
    assert!(
        params["size"].is_null() && params["filesize"].is_null(),
        "{params}"
    );
    let io = &doc["runs"][0]["phases"][1];
    let filled = figure(&doc, "written until full").unwrap() * f64::from(1 << 20);
    assert_eq!(filled as u64, io["bytes"].as_u64().unwrap(), "{io}");
    // The cap bounds it, and says so.
    let out = run(fsbench(state.path())
        .args(["fio", "--runs", "1", "--output-format", "json"])
        .args(["--cap", "size=1m", "--dir"])
        .arg(&small.0)
        .arg(&jobfile));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(written(&json(&out)), 1 << 20);
    assert!(
        text(&out.stderr).contains("--cap size=1M"),
        "{}",
        text(&out.stderr)
    );
    for (lines, needle) in [
        ("rw=randrw", "`fill-device`: `rw=randrw`"),
        (
            "rw=write\nioengine=libaio",
            "with ioengine=libaio not implemented",
        ),
    ] {
        let jobfile = job_file(state.path(), &format!("[f]\nfill_device=1\n{lines}\n"));
        let out = fio_output(state.path(), &small.0, &jobfile, "json");
        assert_eq!(out.status.code(), Some(2), "{lines}");
        assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
    }
    assert_empty(&small.0);
    if !has_tool("fio") {
        skip("fill_device against fio's: fio is not installed");
        return;
    }
    let (doc, all) = fio_json(&small.0, &jobfile);
    let theirs = written(&doc);
    assert!((6 << 20..=8 << 20).contains(&theirs), "{theirs}: {all}");
    assert_eq!(doc["jobs"][0]["error"].as_u64(), Some(0), "{all}");
}

/// The share of `block`-byte blocks of `data` that repeat a block before them.
fn repeated_share(data: &[u8], block: usize) -> f64 {
    let mut seen = std::collections::HashSet::new();
    let blocks: Vec<&[u8]> = data.chunks_exact(block).collect();
    let repeats = blocks.iter().filter(|b| !seen.insert(**b)).count();
    repeats as f64 / blocks.len() as f64
}

#[test]
fn dedupe_modes_repeat_blocks_in_the_share_fio_s_written_file_has() {
    if !can_run("dedupe on a loop device", &["losetup"]) {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    // The queueing engines refill each write's buffer before it is queued.
    for (mode, engine) in [
        ("repeat", "psync"),
        ("working_set", "psync"),
        ("working_set", "libaio\niodepth=8"),
    ] {
        let device = LoopDevice::blank(8);
        let job = format!(
            "[d]\nfilename={}\nrw=write\nbs=4k\nsize=4m\ndedupe_percentage=40\ndedupe_mode={mode}\ndedupe_working_set_percentage=10\nioengine={engine}\n",
            device.dev
        );
        let jobfile = job_file(state.path(), &job);
        let out = run(fsbench(state.path())
            .args(["fio", "-q", "--runs", "1", "--target-device", &device.dev])
            .arg("--dir")
            .arg(dir.path())
            .arg(&jobfile));
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let bytes = std::fs::read(&device.dev).unwrap();
        let ours = repeated_share(&bytes[..4 << 20], 4096);
        assert!((0.33..=0.47).contains(&ours), "{mode}: {ours}");
        if !has_tool("fio") {
            continue;
        }
        let fio_dir = tempdir();
        let file_job = job.replace(&device.dev, "data");
        fio_json(fio_dir.path(), &job_file(state.path(), &file_job));
        let theirs = std::fs::read(fio_dir.path().join("data")).unwrap();
        let theirs = repeated_share(&theirs, 4096);
        assert!(
            (ours - theirs).abs() <= 0.07,
            "{mode}: {ours} / fio {theirs}"
        );
    }
    assert_nothing_left(dir.path());
}

/// The `EXT4_IOC_MOVE_EXT` calls of a strace log: each move's `orig_start` and `len`
/// where strace decodes them, else (Debian's strace 6 prints the request's number and the
/// argument's address) its result.
fn moves(log: &str) -> Vec<String> {
    (log.lines())
        .filter(|l| l.contains("EXT4_IOC_MOVE_EXT") || l.contains("0x66, 0xf, 0x28)"))
        .map(|l| match l.split_once("EXT4_IOC_MOVE_EXT, {") {
            Some((_, rest)) => (rest.split(['}', ',']))
                .map(str::trim)
                .filter(|a| a.starts_with("orig_start=") || a.starts_with("len="))
                .take(2)
                .collect::<Vec<_>>()
                .join(", "),
            None => format!("move = {}", l.rsplit_once(" = ").map_or("?", |(_, r)| r)),
        })
        .collect()
}

#[test]
fn e4defrag_moves_blocks_from_its_donor_as_fio_s_engine_and_needs_ext4() {
    let state = tempdir();
    let job = "[d]\nioengine=e4defrag\ndonorname=file.def\nfilename=file1\nfilesize=1m\nsize=1m\nbs=32k\nrw=write\ninplace=0\n";
    let jobfile = job_file(state.path(), job);
    let tmp = tmpfs_tempdir();
    let out = fio_output(state.path(), tmp.path(), &jobfile, "json");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("EXT4_IOC_MOVE_EXT") && err.contains("Inappropriate ioctl for device"),
        "{err}"
    );
    for (lines, needle) in [
        ("rw=read", "fails each read with EINVAL"),
        ("rw=write\nend_fsync=1", "fails a sync with EINVAL"),
        ("rw=trim", "fails each trim with EINVAL"),
    ] {
        let bad = job_file(
            state.path(),
            &format!("[d]\nioengine=e4defrag\ndonorname=x\nsize=1m\n{lines}\n"),
        );
        let out = fio_output(state.path(), Path::new("/nonexistent"), &bad, "json");
        assert_eq!(out.status.code(), Some(2), "{lines}");
        assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
    }
    let bad = job_file(state.path(), "[d]\nioengine=e4defrag\nsize=1m\nrw=write\n");
    let out = fio_output(state.path(), Path::new("/nonexistent"), &bad, "json");
    assert!(text(&out.stderr).contains("'donorname' options required"));
    if !can_run("e4defrag on ext4", &["mkfs.ext4", "losetup"]) {
        return;
    }
    let top = tempdir();
    let ext4 = Ext4::mount(top.path(), 64);
    for inplace in ["0", "1"] {
        let job = job.replace("inplace=0", &format!("inplace={inplace}"));
        let jobfile = job_file(state.path(), &job);
        let out = fio_output(state.path(), &ext4.path, &jobfile, "json");
        assert!(
            out.status.success(),
            "inplace={inplace}: {}",
            text(&out.stderr)
        );
        assert_eq!(written(&json(&out)), 1 << 20, "inplace={inplace}");
        if !fio_traced("e4defrag's moves against fio's") {
            continue;
        }
        let log = state.path().join("ours.strace");
        let ours = run(traced("trace=ioctl", &log, env!("CARGO_BIN_EXE_fsbench"))
            .env("FSBENCH_STATE_DIR", state.path())
            .env("XDG_DATA_HOME", test_data_home())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(&ext4.path)
            .arg(&jobfile));
        assert!(ours.status.success());
        let ours = moves(&std::fs::read_to_string(&log).unwrap());
        let fio_dir = ext4.path.join("fio");
        std::fs::create_dir(&fio_dir).unwrap();
        let log = state.path().join("fio.strace");
        run(traced("trace=ioctl", &log, "fio")
            .current_dir(&fio_dir)
            .arg("--output=/dev/null")
            .arg(&jobfile));
        std::fs::remove_dir_all(&fio_dir).unwrap();
        let theirs = moves(&std::fs::read_to_string(&log).unwrap());
        // 32 moves of 32 KiB, in 4 KiB blocks: orig_start 0, 8, 16…, len=8, each done.
        assert_eq!(ours.len(), 32, "{ours:?}");
        assert!(
            ours.iter()
                .all(|m| !m.starts_with("move") || m == "move = 0")
        );
        assert_eq!(ours, theirs, "inplace={inplace}");
    }
    assert_eq!(names_in(&ext4.path), ["lost+found"]);
}

#[test]
fn trimwrite_trims_each_block_then_writes_it_as_fio_reported_in_both_directions() {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    for rw in ["trimwrite", "randtrimwrite"] {
        // Paced, so that the job lasts some milliseconds: fio prints no direction that took
        // none.
        let job = format!(
            "[t]\nfilename=data\nioengine=falloc\nrw={rw}\nbs=4k\nsize=64k\nrate_iops=2000\n"
        );
        let jobfile = job_file(state.path(), &job);
        let out = fio_output(state.path(), dir.path(), &jobfile, "json");
        assert!(out.status.success(), "{rw}: {}", text(&out.stderr));
        let doc = json(&out);
        let j = &doc["jobs"][0];
        for d in ["trim", "write"] {
            assert_eq!(j[d]["total_ios"].as_u64(), Some(16), "{rw} {d}: {j}");
            assert_eq!(j[d]["io_bytes"].as_u64(), Some(64 << 10), "{rw} {d}");
            assert_eq!(j[d]["clat_ns"]["N"].as_u64(), Some(16), "{rw} {d}");
        }
        let out = fio_output(state.path(), dir.path(), &jobfile, "normal");
        let normal = text(&out.stdout);
        assert!(normal.contains("issued rwts: total=0,16,16,0"), "{normal}");
    }
    let bad = job_file(state.path(), "[t]\nrw=trimwrite\nsize=64k\n");
    let out = fio_output(state.path(), Path::new("/nonexistent"), &bad, "json");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("ioctl(BLKDISCARD)"));
    assert_nothing_left(dir.path());
    if !fio_traced("trimwrite's calls against fio's") {
        return;
    }
    // Each block: a hole punched, then allocated again; fio's order, call for call.
    let job = "[t]\nfilename=data\nioengine=falloc\nrw=trimwrite\nbs=4k\nsize=64k\n";
    let jobfile = job_file(state.path(), job);
    let of_the_job = |log: &Path| -> Vec<String> {
        (std::fs::read_to_string(log).unwrap().lines())
            .filter(|l| l.contains("fallocate(") && l.contains(", 4096) = 0"))
            .filter_map(|l| l.split_once("data>, ").map(|(_, args)| args.to_string()))
            .collect()
    };
    let log = state.path().join("ours.strace");
    let ours = run(
        traced("trace=fallocate", &log, env!("CARGO_BIN_EXE_fsbench"))
            .env("FSBENCH_STATE_DIR", state.path())
            .env("XDG_DATA_HOME", test_data_home())
            .args(["fio", "-q", "--runs", "1", "--dir"])
            .arg(dir.path())
            .arg(&jobfile),
    );
    assert!(ours.status.success());
    let ours = of_the_job(&log);
    let fio_dir = tmpfs_tempdir();
    let log = state.path().join("fio.strace");
    run(traced("trace=fallocate", &log, "fio")
        .current_dir(fio_dir.path())
        .arg("--output=/dev/null")
        .arg(&jobfile));
    let theirs = of_the_job(&log);
    assert_eq!(ours.len(), 32, "{ours:?}");
    assert!(
        ours[0].starts_with("FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0,"),
        "{ours:?}"
    );
    assert!(ours[1].starts_with("0, 0,"), "{ours:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn verify_takes_an_offset_that_is_no_multiple_of_the_interval() {
    // cross-stripe-verify.fio's shape: 16 KiB blocks from 4 KiB in, each verified.
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let job = "[w]\nfilename=data\nrw=write\nbs=16k\noffset=4k\nsize=256k\nverify=crc32c\n";
    let out = fio_job_json(state.path(), dir.path(), job);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(figure(&json(&out), "verified blocks"), Some(16.0));
    assert_nothing_left(dir.path());
}
