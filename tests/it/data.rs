//! The data workloads on real filesystems: FIEMAP extent counts against filefrag, alloc-perf's
//! methods, FFSB profiles, and a disk filling up mid-run.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// A loop-mounted filesystem made for one test, unmounted and detached when dropped.
struct Mounted {
    mnt: PathBuf,
    _mnt_dir: tempfile::TempDir,
    _device: LoopDevice,
}

impl Mounted {
    fn new(fs: &str, size_mib: u64) -> Mounted {
        let device = LoopDevice::blank(size_mib);
        let dev = &device.dev;
        let force = if fs.starts_with("ext") { "-F" } else { "-f" };
        let st = status(Command::new(format!("mkfs.{fs}")).args([force, "-q", dev]));
        assert!(st.success(), "mkfs.{fs}");
        let mnt_dir = tempdir();
        let mnt = mnt_dir.path().to_path_buf();
        let st = status(Command::new("mount").arg(dev).arg(&mnt));
        assert!(st.success(), "mount");
        Mounted {
            mnt,
            _mnt_dir: mnt_dir,
            _device: device,
        }
    }
}

impl Drop for Mounted {
    /// Unmounted before its loop device (a field, dropped after this) is detached.
    fn drop(&mut self) {
        status(Command::new("umount").arg(&self.mnt));
    }
}

/// `filefrag FILE`'s "N extents found".
fn filefrag(path: &Path) -> u64 {
    let out = run(Command::new("filefrag").arg(path));
    assert!(out.status.success(), "filefrag: {}", text(&out.stderr));
    let line = text(&out.stdout);
    let count = line
        .rsplit(':')
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    count
        .parse()
        .unwrap_or_else(|_| panic!("filefrag said {line}"))
}

fn write_file(path: &Path, bytes: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0xa5u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n]).unwrap();
        left -= n as u64;
    }
    f.sync_all().unwrap();
}

/// Fills the filesystem with 256 KiB files, frees every other one and writes `name` into
/// the holes: a file that cannot be contiguous.
fn fragmented_file(mnt: &Path, name: &str) -> PathBuf {
    let fill = mnt.join("fill");
    std::fs::create_dir(&fill).unwrap();
    let chunk = vec![0x11u8; 256 << 10];
    let mut made = 0;
    loop {
        let path = fill.join(made.to_string());
        let ok = std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&chunk).and_then(|()| f.sync_all()));
        if ok.is_err() {
            let _ = std::fs::remove_file(&path);
            break;
        }
        made += 1;
    }
    for i in (0..made).step_by(2) {
        std::fs::remove_file(fill.join(i.to_string())).unwrap();
    }
    status(&mut Command::new("sync"));
    // btrfs frees extents at the commit after the unlinks.
    status(&mut Command::new("sync"));
    let path = mnt.join(name);
    let f = std::fs::File::create(&path).unwrap();
    // Written 64 KiB at a time with a sync each, so no allocator can plan it in one piece.
    for i in 0..64u64 {
        if f.write_at(&chunk[..64 << 10], i * (64 << 10)).is_err() {
            break;
        }
        f.sync_data().unwrap();
    }
    path
}

fn check_extents_match_filefrag(fs: &str, size_mib: u64) {
    if !can_run(
        &format!("FIEMAP on {fs}"),
        &[&format!("mkfs.{fs}"), "filefrag"],
    ) {
        return;
    }
    let m = Mounted::new(fs, size_mib);
    let contiguous = m.mnt.join("contiguous");
    write_file(&contiguous, 24 << 20);
    let small = m.mnt.join("small");
    write_file(&small, 10_000);
    let sparse = m.mnt.join("sparse");
    {
        let f = std::fs::File::create(&sparse).unwrap();
        f.write_at(b"start", 0).unwrap();
        f.write_at(b"middle", 8 << 20).unwrap();
        f.write_at(b"end", 16 << 20).unwrap();
        f.sync_all().unwrap();
    }
    let fragmented = fragmented_file(&m.mnt, "fragmented");
    status(&mut Command::new("sync"));
    let mut mapper = fsbench_measure::extents::Mapper::new();
    let mut counts = Vec::new();
    for path in [&contiguous, &small, &sparse, &fragmented] {
        let file = std::fs::File::open(path).unwrap();
        let ours = mapper.count(&file).unwrap();
        let theirs = filefrag(path);
        assert_eq!(
            ours.fragments,
            theirs,
            "{fs} {}: fsbench counts {ours:?}, filefrag {theirs}",
            path.display()
        );
        assert!(ours.extents >= ours.fragments);
        let layout = mapper.layout(&file).unwrap();
        assert_eq!(layout.len() as u64, ours.extents);
        counts.push(ours.fragments);
    }
    assert!(
        counts[3] > 2,
        "{fs}: the deliberately fragmented file has {} fragment(s)",
        counts[3]
    );
    let layout = mapper
        .layout(std::fs::File::open(&contiguous).unwrap())
        .unwrap();
    let mapped: u64 = layout.iter().map(|e| e.length).sum();
    assert!(
        mapped >= 24 << 20,
        "{fs}: extents cover {mapped} bytes of 24 MiB"
    );
    println!("{fs}: fragments {counts:?} equal filefrag's");
}

#[test]
fn fiemap_counts_equal_filefrag_on_ext4() {
    check_extents_match_filefrag("ext4", 128);
}

#[test]
fn fiemap_counts_equal_filefrag_on_xfs() {
    check_extents_match_filefrag("xfs", 320);
}

#[test]
fn fiemap_counts_equal_filefrag_on_btrfs() {
    check_extents_match_filefrag("btrfs", 160);
}

fn run_json(state: &Path, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let out = run(fsbench(state)
        .args(args)
        .args(["--output-format", "json", "-q"]));
    let doc = json(&out);
    (out, doc)
}

/// The mean of figure `metric` (without dimensions) of `phase` for `config`.
fn mean(doc: &serde_json::Value, config: &str, phase: &str, metric: &str) -> Option<f64> {
    mean_at(doc, config, phase, metric, &serde_json::Value::Null)
}

/// The mean of figure `metric` at dimensions `dims` (`null` for none).
fn mean_at(
    doc: &serde_json::Value,
    config: &str,
    phase: &str,
    metric: &str,
    dims: &serde_json::Value,
) -> Option<f64> {
    doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["config"] == config
                && s["phase"] == phase
                && s["metric"] == metric
                && s["dims"] == *dims
        })
        .map(|s| s["mean"].as_f64().unwrap())
}

#[test]
fn alloc_fallocate_is_fast_and_whole_on_ext4_and_unsupported_on_ext2() {
    if !can_run("alloc", &["mkfs.ext4", "mkfs.ext2"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let (out, doc) = run_json(
        state.path(),
        &[
            "run",
            "--image-dir",
            dir.path().to_str().unwrap(),
            "--fs",
            "ext4",
            "--fs",
            "ext2",
            "-w",
            "alloc:size=256m,methods=posix-fallocate+fallocate+chunk-4096",
            "--runs",
            "1",
        ],
    );
    assert!(out.status.success());
    let posix_extents = mean(&doc, "ext4", "posix-fallocate", "extents").unwrap();
    assert!(
        posix_extents <= 4.0,
        "ext4 posix_fallocate: {posix_extents} extents"
    );
    let posix = mean(&doc, "ext4", "posix-fallocate", "time").unwrap();
    let chunks = mean(&doc, "ext4", "chunk-4096", "time").unwrap();
    assert!(
        posix < chunks / 5.0,
        "ext4: posix_fallocate {posix} s is not a small fraction of 4 KiB writes' {chunks} s"
    );
    assert!(mean(&doc, "ext4", "fallocate", "extents").is_some());
    // ext2 has no native fallocate: reported, with no figure, not silently emulated.
    assert!(mean(&doc, "ext2", "fallocate", "time").is_none());
    let ext2 = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"] == "ext2")
        .unwrap();
    let fallocate = ext2["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fallocate")
        .unwrap();
    assert!(
        fallocate["unsupported"]
            .as_str()
            .unwrap()
            .contains("not supported"),
        "{fallocate}"
    );
    // glibc's posix_fallocate writes blocks on ext2: it works, slowly.
    assert!(mean(&doc, "ext2", "posix-fallocate", "extents").unwrap() >= 1.0);
    assert_nothing_left(dir.path());
}

const TWO_GROUPS: &str = "# two thread groups, each with two operations weighted 1:1
time=0
[filesystem0]
    num_files=100
    num_dirs=4
    min_filesize=16k
    max_filesize=64k
[end0]
[threadgroup0]
    num_threads=3
    num_ops=1000
    read_weight=1
    write_weight=1
    read_size=8k
    read_blocksize=4k
    write_size=8k
    write_blocksize=4k
[end0]
[threadgroup1]
    num_threads=1
    num_ops=1000
    create_weight=1
    stat_weight=1
    write_blocksize=4k
[end1]
";

#[test]
fn ffsb_profile_runs_with_operation_counts_near_the_weights() {
    if !can_run("ffsb profile", &["mkfs.ext4"]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let profile = dir.path().join("two-groups.ffsb");
    std::fs::write(&profile, TWO_GROUPS).unwrap();
    let images = tempdir();
    let (out, doc) = run_json(
        state.path(),
        &[
            "ffsb",
            profile.to_str().unwrap(),
            "--image-dir",
            images.path().to_str().unwrap(),
            "--fs",
            "ext4",
            "--runs",
            "1",
        ],
    );
    assert!(out.status.success());
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "ok");
    let phase = run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "run")
        .unwrap();
    assert_eq!(phase["ops"], 4000, "3×1000 + 1×1000 transactions");
    let count = |op: &str| phase["latency"][op]["count"].as_u64().unwrap_or(0) as f64;
    let (read, write, create, stat) = (
        count("read"),
        count("write"),
        count("create"),
        count("stat"),
    );
    assert_eq!(read + write, 3000.0);
    assert_eq!(create + stat, 1000.0);
    // Binomial: 3,000 draws at 1/2 have a standard deviation of 27; ±150 is over 5 of them.
    assert!((read - 1500.0).abs() < 150.0, "read {read}, write {write}");
    assert!(
        (create - 500.0).abs() < 90.0,
        "create {create}, stat {stat}"
    );
    // FFSB's "Transactions": one per 4 KiB block call of reads, writes and creates (8 KiB
    // reads and writes are two calls; a 16–64 KiB create four to sixteen), one per stat.
    let calls = |op: &str| mean(&doc, "ext4", "run", &format!("{op} transactions")).unwrap();
    assert_eq!(calls("read"), 2.0 * read);
    assert_eq!(calls("write"), 2.0 * write);
    assert_eq!(calls("stat"), stat);
    assert!((4.0 * create..=16.0 * create).contains(&calls("create")));
    let all_calls = calls("read") + calls("write") + calls("create") + calls("stat");
    // The phase's rate counts operations and says so; FFSB's transactions/s is its own.
    let rate_unit = doc["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["phase"] == "run" && s["metric"] == "rate")
        .map(|s| s["unit"].clone());
    assert_eq!(rate_unit, Some("operations/s".into()));
    assert!(mean(&doc, "ext4", "run", "transactions/s").is_some());
    let share = mean(&doc, "ext4", "run", "read % trans").unwrap();
    assert!(
        (share - 100.0 * calls("read") / all_calls).abs() < 1e-9,
        "read % trans {share}"
    );
    // "% Op Weight": the share of operations run (FFSB's op_weight counter), which follows
    // the weights within binomial bounds: 37.5% of 4,000.
    let weight = mean(&doc, "ext4", "run", "read % op weight").unwrap();
    assert!((weight - 100.0 * read / 4000.0).abs() < 1e-9, "{weight}");
    assert!((weight - 37.5).abs() < 3.75, "read % op weight {weight}");
    // Per thread group as FFSB prints it: group 1 ran no reads, its creates are half its work.
    let group = |g: u64| serde_json::json!([{"name": "thread group", "count": g}]);
    let group_read = mean_at(&doc, "ext4", "run", "read % op weight", &group(0)).unwrap();
    assert!((group_read - 100.0 * read / 3000.0).abs() < 1e-9);
    assert_eq!(
        mean_at(&doc, "ext4", "run", "read % op weight", &group(1)),
        None
    );
    assert!(mean_at(&doc, "ext4", "run", "create % op weight", &group(1)).is_some());
    // Throughput as FFSB: over the run time including its final sync, so no higher than
    // fsbench's figure before that sync.
    let (ffsb, before) = (
        mean(&doc, "ext4", "run", "write throughput").unwrap(),
        mean(&doc, "ext4", "run", "write throughput before sync").unwrap(),
    );
    assert!(ffsb > 0.0 && ffsb <= before, "{ffsb} vs {before}");
    for figure in [
        "extents avg",
        "extents max",
        "fsck",
        "unmount",
        "cpu user",
        "cpu system",
    ] {
        assert!(
            mean(&doc, "ext4", "run", figure).is_some(),
            "no `{figure}` figure"
        );
    }
    // The file set and what the creates added are gone after rm -rf.
    let removed = run["phases"][2]["ops"].as_u64().unwrap();
    assert!(removed >= 100 + create as u64, "removed {removed} entries");
    assert_nothing_left(images.path());
}

#[test]
fn ffsb_profiles_with_typos_are_refused_with_the_line_and_the_seed_s_needs_its_space() {
    let dir = tempdir();
    let state = tempdir();
    let typo = dir.path().join("typo.ffsb");
    std::fs::write(
        &typo,
        TWO_GROUPS.replace("read_blocksize", "read_blocksise"),
    )
    .unwrap();
    let out = run(fsbench(state.path()).args(["ffsb", typo.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("typo.ffsb, line 15") && err.contains("read_blocksise"),
        "{err}"
    );
    // The FFSB report's profile as written: 128 threads each writing 1 GiB files for 600 s.
    let seed = dir.path().join("seed.ffsb");
    std::fs::write(
        &seed,
        "num_filesystems=1\nnum_threadgroups=1\ndirectio=0\ntime=600\n\n[filesystem0]\n\
         \tlocation=/mnt/test/\n\tnum_files=0\n\tnum_dirs=0\n\tmax_filesize=1073741824\n\
         \tmin_filesize=1073741824\n[end0]\n\n[threadgroup0]\n\tnum_threads=128\n\
         \twrite_size=65536\n\twrite_blocksize=65536\n\tcreate_weight=1\n[end0]\n",
    )
    .unwrap();
    let out = run(fsbench(state.path()).args([
        "ffsb",
        seed.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]));
    // It parses; the space it needs (128 files of 1 GiB in flight) is checked before anything.
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("location=/mnt/test/ is not used"), "{err}");
    assert!(err.contains("need about"), "{err}");
}

#[test]
fn ffsb_large_write_fills_a_small_disk_with_a_clear_error_keeping_earlier_runs() {
    if !can_run("ffsb disk full", &["mkfs.ext4"]) {
        return;
    }
    let images = tempdir();
    let state = tempdir();
    // 4 × 100 MiB fit the plain ext4 of a 512 MiB image; with 1 KiB inodes by the 100,000
    // the inode tables take 100 MiB and the last file does not fit.
    let (out, doc) = run_json(
        state.path(),
        &[
            "run",
            "--image-dir",
            images.path().to_str().unwrap(),
            "--image-size",
            "512M",
            "--fs",
            "ext4",
            "--fs",
            "ext4:mkfs=-N 100000 -I 1024:label=fat-inodes",
            "-w",
            "ffsb-large-write:threads=4,size=100m",
            "--runs",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("ENOSPC"));
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[1]["status"], "failed");
    assert!(runs[1]["error"].as_str().unwrap().contains("ENOSPC"));
    assert!(mean(&doc, "ext4", "run", "write throughput").is_some());
    assert_nothing_left(images.path());
}

/// One row of FFSB's operation table: name, Transactions, Trans/sec, % Trans, % Op Weight,
/// Throughput.
type FfsbRow = (String, u64, f64, f64, f64, String);

/// A row as FFSB's own output would be parsed:
/// `%20s : %12u\t%10.2lf\t%6.3lf%%\t\t%6.3lf%%\t  %11s`.
fn ffsb_row(line: &str) -> Option<FfsbRow> {
    let (name, rest) = line.split_once(" : ")?;
    let fields: Vec<&str> = rest
        .split('\t')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    let [tx, rate, trans, weight, throughput] = fields[..] else {
        return None;
    };
    Some((
        name.trim().to_string(),
        tx.parse().ok()?,
        rate.parse().ok()?,
        trans.strip_suffix('%')?.parse().ok()?,
        weight.strip_suffix('%')?.parse().ok()?,
        throughput.to_string(),
    ))
}

#[test]
fn fsbench_ffsb_prints_ffsb_s_report() {
    let dir = tempdir();
    let state = tempdir();
    let profile = dir.path().join("two-groups.ffsb");
    std::fs::write(&profile, TWO_GROUPS).unwrap();
    let work = tempdir();
    let out = run(fsbench(state.path())
        .args(["ffsb", profile.to_str().unwrap(), "--runs", "1", "--dir"])
        .arg(work.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let at = |title: &str| {
        lines
            .iter()
            .position(|l| *l == title)
            .unwrap_or_else(|| panic!("no {title}:\n{stdout}"))
    };
    let (g0, g1, total) = (
        at("ThreadGroup 0"),
        at("ThreadGroup 1"),
        at("Total Results"),
    );
    assert!(g0 < g1 && g1 < total);
    assert!(lines[g0 + 2].starts_with("             Op Name   Transactions\t Trans/sec\t% Trans"));
    // Each block: its rows' % Trans and % Op Weight add up to 100, and the transactions per
    // second line is the sum of the rows' Trans/sec.
    for start in [g0, g1, total] {
        let rows: Vec<_> = lines[start + 4..]
            .iter()
            .map_while(|l| ffsb_row(l))
            .collect();
        assert!(!rows.is_empty(), "{stdout}");
        let sum = |f: fn(&FfsbRow) -> f64| rows.iter().map(f).sum::<f64>();
        assert!((sum(|r| r.3) - 100.0).abs() < 0.01, "{rows:?}");
        assert!((sum(|r| r.4) - 100.0).abs() < 0.01, "{rows:?}");
        let tps_line = lines[start + 4 + rows.len() + 1];
        let tps: f64 = tps_line
            .strip_suffix(" Transactions per Second")
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (tps - sum(|r| r.2)).abs() / tps < 0.001,
            "{tps_line} vs {rows:?}"
        );
        for r in &rows {
            let moves_data = r.0 != "stat";
            assert_eq!(r.5.ends_with("B/sec"), moves_data, "{r:?}");
        }
    }
    let total_rows: Vec<_> = lines[total + 4..]
        .iter()
        .map_while(|l| ffsb_row(l))
        .collect();
    let names: Vec<&str> = total_rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        ["read", "write", "create", "stat"],
        "FFSB's operation order"
    );
    assert!(stdout.contains("Read Throughput: ") && stdout.contains("Write Throughput: "));
    assert!(
        lines.iter().any(|l| l.ends_with("% CPU Utilization")),
        "{stdout}"
    );
    // fsbench's own tables follow.
    assert!(stdout.contains("Phase times"), "{stdout}");
}
