//! fio's engines for PMDK's libraries in job files: `pmemblk` on a real libpmemblk pool
//! (written, read back and checked; made and removed as fio makes and removes it), its
//! refusals with their lines, `libpmem` refused where fio fails it (no persistent memory
//! here) and run through `PMEM_IS_PMEM_FORCE=1` as fio runs it, and `dev-dax` refused.

use std::process::Output;

use crate::common::*;
use crate::fio_engines::{fio_traced, traced};

/// Whether PMDK's libraries are installed (scripts/install-deps.sh --tests installs them:
/// Debian's fio depends on them); says why the test is skipped otherwise.
fn has_pmdk(test: &str) -> bool {
    // ldconfig is in /sbin, which a PATH may lack.
    let out = run(
        std::process::Command::new("sh").args(["-c", "PATH=$PATH:/usr/sbin:/sbin ldconfig -p"])
    );
    let listed = text(&out.stdout);
    if listed.contains("libpmemblk.so.1") && listed.contains("libpmem.so.1") {
        return true;
    }
    skip(&format!(
        "{test}: PMDK's libpmem1 and libpmemblk1 are not installed (scripts/install-deps.sh --tests installs them)"
    ));
    false
}

/// The figure `name` of the timed phase of fsbench's document.
fn figure(doc: &serde_json::Value, name: &str) -> Option<f64> {
    (doc["runs"][0]["phases"][1]["figures"].as_array()?.iter())
        .find(|f| f["name"] == name)?["value"]
        .as_f64()
}

/// `fsbench fio` on `job` in a fresh tmpfs directory, its document on stdout, with the
/// environment variable `env` set.
fn fio_json_with(job: &str, env: (&str, &str)) -> Output {
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    fio_job_json_with(state.path(), dir.path(), job, &[env])
}

const WRITE_VERIFY: &str = "[w]\nioengine=pmemblk\nthread\nrw=randwrite\nbs=4k\nsize=4m\nverify=crc32c\nfilename=pool,4096,32\nunlink=1\n";

#[test]
fn pmemblk_writes_blocks_it_reads_back_and_checks() {
    if !has_pmdk("pmemblk_writes_blocks_it_reads_back_and_checks") {
        return;
    }
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let out = fio_job_json(state.path(), dir.path(), WRITE_VERIFY);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Every 4 KiB block written went through pmemblk_write, and came back whole through
    // pmemblk_read: each one's checksum checked.
    let doc = json(&out);
    assert_eq!(figure(&doc, "verified blocks"), Some(1024.0));
    assert!(figure(&doc, "iops").is_some_and(|v| v > 0.0), "{doc}");
    // Two groups on one pool: the reads find what the writes left (checked as fio checks
    // a read-only job's reads of what an earlier group wrote).
    let two = "[global]\nioengine=pmemblk\nthread\nbs=4k\nsize=1m\nfilename=pool,512,20\nverify=md5\n[w]\nrw=write\n[r]\nstonewall\nrw=read\nunlink=1\n";
    let out = fio_job_json(state.path(), dir.path(), two);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let reads = (doc["runs"].as_array().unwrap().iter())
        .filter_map(|r| r["phases"][1]["figures"].as_array())
        .flatten()
        .find(|f| f["name"] == "verified blocks");
    assert!(reads.is_some(), "{doc}");
    assert_empty(dir.path());
}

/// The calls on the pool file `pool` in a strace log: its creation, allocation and removal.
fn pool_calls(log: &str) -> Vec<String> {
    (log.lines())
        .filter(|l| l.contains("pool\"") || l.contains("/pool>"))
        .filter_map(|l| {
            let call = l.split_once(' ')?.1.trim_start();
            let name = call.split('(').next()?;
            let made = call.contains("O_CREAT");
            let kept = call.ends_with("= 0") || made && !call.contains("= -1");
            match name {
                "openat" if made && kept => Some("create".to_string()),
                "fallocate" => Some(format!("fallocate {}", call.split_once(", ")?.1)),
                "unlink" | "unlinkat" if kept => Some("unlink".to_string()),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn pmemblk_makes_its_pool_and_removes_it_as_fio_does() {
    let test = "pmemblk_makes_its_pool_and_removes_it_as_fio_does";
    if !has_pmdk(test) || !fio_traced(test) {
        return;
    }
    let job = "[w]\nioengine=pmemblk\nthread\nrw=write\nbs=4k\nsize=1m\nfilename=pool,4096,32\nunlink=1\n";
    let [(ours, _), (theirs, _)] =
        crate::fio_engines::traced_runs(job, "trace=openat,fallocate,unlink,unlinkat");
    // libpmemblk makes the file (O_CREAT|O_EXCL) and allocates the pool's 32 MiB once;
    // `unlink=1` removes it once (fio tries twice, the second finding it gone).
    let expected = ["create", "fallocate 0, 0, 33554432) = 0", "unlink"];
    assert_eq!(pool_calls(&ours), expected, "fsbench:\n{ours}");
    assert_eq!(pool_calls(&theirs), expected, "fio:\n{theirs}");
}

#[test]
fn pmem_jobs_fsbench_or_fio_cannot_run_are_refused_with_their_lines() {
    if !has_pmdk("pmem_jobs_fsbench_or_fio_cannot_run_are_refused_with_their_lines") {
        return;
    }
    let state = tempdir();
    let dir = tmpfs_tempdir();
    let pool = "ioengine=pmemblk\nthread\nsize=1m\nfilename=pool,4096,32\n";
    for (job, needle) in [
        (
            "[a]\nioengine=pmemblk\nsize=1m\nfilename=pool,4096,32\n",
            "job.fio:2: job `a`: io: `ioengine=pmemblk`: fio: \"pmemblk: must set thread=1",
        ),
        (
            "[a]\nioengine=pmemblk\nthread\nsize=1m\nfilename=pool,4k,32\n",
            "job.fio:5: job `a`: io: `filename=pool,4k,32`: fio's pmemblk engine takes PATH,BSIZE,FSIZEMiB",
        ),
        (
            "[a]\nioengine=pmemblk\nthread\nsize=1m\nfilename=pool,4096,8\n",
            "job.fio:5: job `a`: io: `ioengine=pmemblk`: `filename=pool,4096,8`: libpmemblk's smallest pool",
        ),
        (
            &format!("[a]\n{pool}bs=512\n"),
            "job.fio:6: job `a`: io: `ioengine=pmemblk`: `bs=512` is not a multiple of the pool's block size (4096)",
        ),
        (
            "[a]\nioengine=pmemblk\nthread\nsize=1m\nfilename=pool\n",
            "gives no block size and pool size (PATH,BSIZE,FSIZEMiB), and no group before it made the pool",
        ),
        (
            "[a]\nsize=1m\nioengine=dev-dax\nfilename=dax\n",
            "job.fio:3: job `a`: io: `ioengine=dev-dax`: fio's engine maps a device-DAX character device (/dev/daxN.M",
        ),
        (
            &format!("[a]\n{pool}rw=trim\n"),
            "io: `rw=trim`: fio's pmemblk engine fails each trim with EINVAL",
        ),
    ] {
        let out = fio_job_json(state.path(), dir.path(), job);
        assert_eq!(out.status.code(), Some(2), "{job}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(needle),
            "{job}: {}",
            text(&out.stderr)
        );
    }
    assert_empty(dir.path());
}

#[test]
fn a_machine_without_pmdk_refuses_its_engines_naming_the_package() {
    // The library named by FSBENCH_LIBPMEMBLK or FSBENCH_LIBPMEM is the one loaded: one
    // that is not there fails to load as on a machine without PMDK.
    for (env, engine, package, job) in [
        (
            "FSBENCH_LIBPMEMBLK",
            "pmemblk",
            "libpmemblk1",
            "[a]\nsize=1m\nthread\nioengine=pmemblk\nfilename=pool,4096,32\n",
        ),
        (
            "FSBENCH_LIBPMEM",
            "libpmem",
            "libpmem1",
            "[a]\nsize=1m\nrw=read\nioengine=libpmem\n",
        ),
    ] {
        let out = fio_json_with(job, (env, "/nonexistent/libpmdk.so.1"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let needle = format!("job.fio:4: job `a`: io: `ioengine={engine}`: needs PMDK's lib");
        assert!(err.contains(&needle), "{err}");
        assert!(
            err.contains("/nonexistent/libpmdk.so.1")
                && err.contains(&format!("apt install {package}")),
            "{err}"
        );
    }
}

const LIBPMEM: &str =
    "[w]\nioengine=libpmem\nrw=write\nbs=4k\nsize=4m\nsync=1\ndirect=1\nverify=crc32c\n";

#[test]
fn libpmem_is_refused_off_persistent_memory_as_fio_fails_it() {
    if !has_pmdk("libpmem_is_refused_off_persistent_memory_as_fio_fails_it") {
        return;
    }
    let out = fio_json_with(LIBPMEM, ("PMEM_IS_PMEM_FORCE", "0"));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("job.fio:2: job `w`: io: `ioengine=libpmem`: ")
            && err.contains("is not on persistent memory; fio fails the job there (err=95"),
        "{err}"
    );
    if !has_tool("fio") {
        return skip("libpmem_is_refused_off_persistent_memory_as_fio_fails_it: fio's side");
    }
    let dir = tmpfs_tempdir();
    let jobfile = dir.path().join("job.fio");
    std::fs::write(&jobfile, LIBPMEM).unwrap();
    let theirs = run(std::process::Command::new("fio")
        .current_dir(dir.path())
        .env("PMEM_IS_PMEM_FORCE", "0")
        .arg(&jobfile));
    let said = text(&theirs.stdout) + &text(&theirs.stderr);
    assert!(
        said.contains("err=95") && said.contains("does not point to persistent memory"),
        "{said}"
    );
}

#[test]
fn libpmem_runs_where_libpmem_takes_the_file_for_persistent_memory() {
    if !has_pmdk("libpmem_runs_where_libpmem_takes_the_file_for_persistent_memory") {
        return;
    }
    // PMEM_IS_PMEM_FORCE=1: libpmem says every mapping is persistent memory (fio runs the
    // job then too): the writes are pmem_memcpy's, each drained (`sync`), read back whole.
    let out = fio_json_with(LIBPMEM, ("PMEM_IS_PMEM_FORCE", "1"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    assert_eq!(figure(&doc, "verified blocks"), Some(1024.0), "{doc}");
    let log = tempdir();
    let strace = log.path().join("libpmem.strace");
    if !fio_traced("libpmem_runs_where_libpmem_takes_the_file_for_persistent_memory") {
        return;
    }
    // No msync and no fsync of the job's: libpmem flushes with the CPU's instructions
    // (`pmem_memcpy`, `pmem_drain` for a sync), and fsbench makes no call of its own for a
    // write or a sync; the one fsync is the layout's.
    let dir = tmpfs_tempdir();
    let jobfile = log.path().join("job.fio");
    std::fs::write(&jobfile, LIBPMEM.replace("verify=crc32c\n", "fsync=4\n")).unwrap();
    let fsbench = env!("CARGO_BIN_EXE_fsbench");
    let out = run(traced("trace=msync,fsync,fdatasync", &strace, fsbench)
        .env("PMEM_IS_PMEM_FORCE", "1")
        .env("FSBENCH_STATE_DIR", log.path())
        .env("XDG_DATA_HOME", test_data_home())
        .args(["fio", "-q", "--runs", "1", "--dir"])
        .arg(dir.path())
        .arg(&jobfile));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(&strace).unwrap();
    let syncs = (calls.lines())
        .filter(|l| l.contains("msync(") || l.contains("w.0.0>"))
        .count();
    assert_eq!(syncs, 1, "{calls}");
}

#[test]
fn a_pmemblk_job_without_a_size_reads_its_whole_pool_as_fio_does() {
    let test = "a_pmemblk_job_without_a_size_reads_its_whole_pool_as_fio_does";
    if !has_pmdk(test) {
        return;
    }
    let job = "[r]\nioengine=pmemblk\nthread\nrw=read\nbs=4k\nfilename=pool,4096,32\nunlink=1\n";
    let (dir, state) = (tmpfs_tempdir(), tempdir());
    let jobfile = state.path().join("job.fio");
    std::fs::write(&jobfile, job).unwrap();
    let read = |out: &Output| {
        let said = text(&out.stdout);
        let doc: serde_json::Value =
            serde_json::from_str(&said[said.find('{').unwrap()..]).unwrap();
        doc["jobs"][0]["read"]["io_bytes"].as_u64().unwrap()
    };
    let out = fio_output(state.path(), dir.path(), &jobfile, "json");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The pool's blocks (libpmemblk keeps some of its 32 MiB for its own layout).
    let ours = read(&out);
    assert!(
        ours % 4096 == 0 && ours > 30 << 20 && ours < 32 << 20,
        "{ours}"
    );
    if !has_tool("fio") {
        return skip(&format!("{test}: fio is not installed"));
    }
    let theirs = run(std::process::Command::new("fio")
        .current_dir(dir.path())
        .args(["--output-format=json"])
        .arg(&jobfile));
    assert!(theirs.status.success(), "{}", text(&theirs.stderr));
    assert_eq!(ours, read(&theirs));
}
