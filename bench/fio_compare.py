#!/usr/bin/env python3
"""The io workload against fio: the same jobs in fio and in fsbench's io
workload, alternated (each tool first in every other round), ROUNDS (>= 5) rounds, medians,
on tmpfs and (as root) on a fresh ext4 loop image attached with direct I/O:

  psync, iodepth 1: 4 KiB randread and randwrite;
  io_uring, iodepth 32, direct: 4 KiB randread;
  128 KiB sequential write with end_fsync, and with fsync=32 (fio's count of syncs);
  numjobs=4 4 KiB randread (the jobs' sum; fio with group_reporting);
  a 70/30 random read/write mix (both directions added up);
  4 KiB random writes with verify=crc32c (the writes compared: both tools stamp every
  block, then read it back and check it after the timed writes);
  rate_iops=5000 randread: p99 latency;
  2,000 files of 4 KiB read once each (each job opens its files as it goes, in its time).

Prints fsbench / fio for IOPS and bandwidth (target >= 0.95) and for p50 and p99 completion
latency (target within +-10% where both are closed loop); the open-loop job also prints the
p99 of the total latency (fsbench counts it from each I/O's scheduled time, fio from its
issue). For the closed-loop 4 KiB jobs bench/io_plain.c (the same calls and nothing else:
pread/pwrite, or the same io_uring ring and enters; built with cc when there is one) runs
beside both, to tell the tools' own costs from the filesystem's. ONLY=TEXT runs the jobs
whose name holds TEXT.
fio's path is in FIO (default `fio`); without it the bench says so and stops.
SIZE (default 256M) is each job's file; TMPFS_ONLY=1 skips the ext4 image.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import fio_against_fsbench, fresh_ext4, settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FIO = os.environ.get("FIO", "fio")
ROUNDS = max(5, int(os.environ.get("ROUNDS", "5")))
SIZE = os.environ.get("SIZE", "256M")
# Each tool gets at most this long per job; fio and fsbench alike stop at the runtime.
RUNTIME = os.environ.get("RUNTIME", "5")

# name, fio/fsbench options (fio's names; fsbench reads the same keys), open loop
JOBS = [
    ("psync qd1 4k randread", {"rw": "randread", "bs": "4k", "ioengine": "psync"}, False),
    ("psync qd1 4k randwrite", {"rw": "randwrite", "bs": "4k", "ioengine": "psync"}, False),
    ("io_uring qd32 direct 4k randread",
     {"rw": "randread", "bs": "4k", "ioengine": "io_uring", "iodepth": "32", "direct": "1",
      "fixedbufs": "1", "registerfiles": "1"}, False),
    ("128k seq write end_fsync", {"rw": "write", "bs": "128k", "ioengine": "psync", "end_fsync": "1"}, False),
    ("128k seq write fsync=32",
     {"rw": "write", "bs": "128k", "ioengine": "psync", "fsync": "32", "end_fsync": "1"}, False),
    ("psync numjobs=4 4k randread", {"rw": "randread", "bs": "4k", "ioengine": "psync", "numjobs": "4"}, False),
    ("psync 4k randrw 70/30", {"rw": "randrw", "rwmixread": "70", "bs": "4k", "ioengine": "psync"}, False),
    ("psync 4k randwrite verify=crc32c",
     {"rw": "randwrite", "bs": "4k", "ioengine": "psync", "verify": "crc32c", "do_verify": "1"}, False),
    ("rate_iops=5000 4k randread",
     {"rw": "randread", "bs": "4k", "ioengine": "psync", "rate_iops": "5000", "time_based": "1"}, True),
    ("psync 2,000 files of 4k read",
     {"rw": "read", "bs": "4k", "ioengine": "psync", "nrfiles": "2000", "filesize": "4k", "size": "8000k"},
     False),
]


def fio(work, opts):
    args = [FIO, "--name=job", f"--directory={work}", f"--size={opts.get('size', SIZE)}", f"--runtime={RUNTIME}",
            "--randrepeat=1", "--lat_percentiles=1", "--group_reporting", "--output-format=json"]
    args += [f"--{k}={v}" for k, v in opts.items()]
    # In `work`: a verify job leaves fio's verify state file in its working directory.
    out = subprocess.run(args, check=True, capture_output=True, text=True, cwd=work).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    first = directions(opts)[0]
    d = job[first]
    pct = d["clat_ns"].get("percentile", {})
    lat = d["lat_ns"].get("percentile", {})
    for f in os.listdir(work):
        os.remove(os.path.join(work, f))
    return {"iops": sum(job[x]["iops"] for x in directions(opts)),
            "bw": sum(job[x]["bw"] for x in directions(opts)),
            "p50": pct.get("50.000000", 0) / 1000,
            "p99": pct.get("99.000000", 0) / 1000, "lat p99": lat.get("99.000000", 0) / 1000}


def directions(opts):
    """The directions a job moves data in, the first one's latency compared."""
    rw = opts["rw"]
    if rw in ("randrw", "readwrite", "rw"):
        return ["read", "write"]
    return ["write" if "write" in rw else "read"]


def fsbench(work, db, opts):
    # fsbench's flags read `=1` as fio's do.
    spec = ",".join(f"{k}={v}" for k, v in opts.items())
    spec = f"io:runtime={RUNTIME},{spec}" if "size" in opts else f"io:size={SIZE},runtime={RUNTIME},{spec}"
    out = subprocess.run([FSBENCH, "--db", db, "run", "-q", "--output-format", "json", "--runs", "1",
                          "--dir", work, "-w", spec], check=True, capture_output=True, text=True).stdout
    # The timed phase `io`, after the untimed `layout`.
    phase = next(p for p in json.loads(out)["runs"][0]["phases"] if p["name"] == "io")
    d = directions(opts)[0]

    def fig(name, pct=None, direction=d):
        for f in phase["figures"]:
            dims = {x["name"]: x.get("text") for x in f.get("dims", [])}
            if f["name"] == name and dims.get("direction") == direction and (pct is None or dims.get("percentile") == pct):
                return f["value"]
        return 0.0
    return {"iops": sum(fig("iops", direction=x) for x in directions(opts)),
            "bw": sum(fig("bw", direction=x) for x in directions(opts)),
            "p50": fig("clat", "p50"), "p99": fig("clat", "p99"),
            "lat p99": phase["latency"][d]["p99_ns"] / 1000}


def plain(work, plain_bin, opts):
    """bench/io_plain.c on a file laid out as the tools lay theirs out."""
    path = os.path.join(work, "plain.0.0")
    size = parse_size(SIZE)
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
        os.fsync(f.fileno())
    settle()
    rw = "write" if "write" in opts["rw"] else "read"
    depth = [opts["iodepth"]] if opts["ioengine"] == "io_uring" else []
    out = subprocess.run([plain_bin, path, str(size), str(parse_size(opts["bs"])), rw, opts.get("direct", "0"), *depth],
                         check=True, capture_output=True, text=True).stdout
    os.remove(path)
    r = json.loads(out)
    return {"iops": r["iops"], "bw": r["iops"], "p50": r["p50"], "p99": r["p99"], "lat p99": r["p99"]}


def parse_size(text):
    units = {"k": 10, "m": 20, "g": 30}
    t = text.lower()
    return int(t[:-1]) << units[t[-1]] if t[-1] in units else int(t)


def compare(work, db, where, plain_bin):
    print(f"\n== {where}: {ROUNDS} rounds, alternated, medians; fsbench / fio ==")
    for name, opts, open_loop in JOBS:
        if os.environ.get("ONLY", "") not in name:
            continue
        tools = ["fio", "fsbench"]
        if (plain_bin and not open_loop and opts["bs"] == "4k" and "numjobs" not in opts
                and opts["rw"] != "randrw" and "verify" not in opts and "nrfiles" not in opts):
            tools.append("plain")
        res = {t: [] for t in tools}
        run = {"fio": lambda: fio(work, opts), "fsbench": lambda: fsbench(work, db, opts),
               "plain": lambda: plain(work, plain_bin, opts)}
        for rnd in range(ROUNDS):
            # Each tool first in turn.
            order = tools[rnd % len(tools):] + tools[:rnd % len(tools)]
            for tool in order:
                settle()
                res[tool].append(run[tool]())
        med = {t: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for t, rs in res.items()}
        a, b = med["fsbench"], med["fio"]
        ratio = lambda k: a[k] / b[k] if b[k] else float("nan")
        line = (f"{name:34} IOPS {a['iops']:9.0f} / {b['iops']:9.0f} = {ratio('iops'):.3f}"
                f"  bw {ratio('bw'):.3f}  clat p50 {a['p50']:.1f}/{b['p50']:.1f} us = {ratio('p50'):.3f}"
                f"  p99 {a['p99']:.1f}/{b['p99']:.1f} us = {ratio('p99'):.3f}")
        if "plain" in med:
            c = med["plain"]
            line += (f"  plain C {c['iops']:.0f} IOPS (fsbench {a['iops'] / c['iops']:.3f}, fio {b['iops'] / c['iops']:.3f}),"
                     f" clat p50 {c['p50']:.1f} p99 {c['p99']:.1f} us")
        if open_loop:
            line += f"  total-lat p99 {a['lat p99']:.1f}/{b['lat p99']:.1f} us (open loop: not a target)"
        print(line, flush=True)


def main():
    status = fio_against_fsbench("fio_compare", FIO, FSBENCH)
    if status is not None:
        return status
    # The loop image on the machine's disk (a direct-I/O loop device over tmpfs means little).
    with tempfile.TemporaryDirectory(prefix="fio-compare.", dir="/var/tmp") as tmp:
        db = os.path.join(tmp, "results.db")
        plain_bin = os.path.join(tmp, "io_plain")
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None or subprocess.run([cc, "-O2", "-o", plain_bin, os.path.join(ROOT, "bench/io_plain.c")]).returncode:
            print("no C compiler: the plain program is left out")
            plain_bin = None
        work = tempfile.mkdtemp(prefix="fio-compare.", dir="/dev/shm")
        try:
            compare(work, db, "tmpfs", plain_bin)
        finally:
            shutil.rmtree(work)
        if os.environ.get("TMPFS_ONLY") or os.geteuid() != 0:
            print("ext4 loop image skipped (TMPFS_ONLY, or not root)")
            return 0
        with fresh_ext4(tmp, direct_io=True) as mnt:
            work = os.path.join(mnt, "work")
            os.mkdir(work)
            compare(work, db, "ext4 on a loop image with direct I/O", plain_bin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
