#!/usr/bin/env python3
"""fio's cpuio engine and latency target in `fsbench fio` against fio, the same job files,
alternated (each tool first in every other round), ROUNDS (>= 3) rounds, medians:

  cpuio: a job file of cpuio jobs (2 copies each at CPULOAD%, noop then qsort, RUNTIME
  seconds): each job's user and system CPU share (fio's usr_cpu and sys_cpu), fsbench
  minus fio (target: within a few points);
  latency_target: a libaio 4 KiB random read job at iodepth 32 on tmpfs, for each of
  TARGETS (microseconds, at the 99th percentile, 50 ms windows): the depth each tool's
  search ends at (fio's latency_depth) and the final window's IOPS.

fio's path is in FIO (default `fio`), fsbench's in FSBENCH (default target/release/fsbench).
The CPU shares need a quiet machine: a busy one deschedules the spinning jobs of both tools.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import fio_against_fsbench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FIO = os.environ.get("FIO", "fio")
ROUNDS = max(3, int(os.environ.get("ROUNDS", "3")))
RUNTIME = os.environ.get("RUNTIME", "5")
CPULOAD = os.environ.get("CPULOAD", "50")
TARGETS = [int(t) for t in os.environ.get("TARGETS", "20,100,1000").split(",")]

CPUIO = f"""[global]
ioengine=cpuio
time_based
runtime={RUNTIME}
cpuload={CPULOAD}
numjobs=2
[noop]
cpumode=noop
[qsort]
stonewall
cpumode=qsort
"""

LATENCY = """[lat]
ioengine=libaio
iodepth=32
rw=randread
bs=4k
size=64m
time_based
runtime={runtime}
latency_target={target}
latency_window=50ms
latency_percentile=99
"""


def jobs_of(stdout):
    """The `jobs` of fio's JSON (after any line fio prints before it)."""
    return json.loads(stdout[stdout.index("{"):])["jobs"]


def fio(work, jobfile):
    out = subprocess.run([FIO, "--output-format=json", jobfile], check=True, capture_output=True,
                         text=True, cwd=work).stdout
    return jobs_of(out)


def fsbench(work, db, jobfile):
    out = subprocess.run([FSBENCH, "--db", db, "fio", "-q", "--runs", "1", "--output-format", "json",
                          "--dir", work, jobfile], check=True, capture_output=True, text=True).stdout
    return jobs_of(out)


def alternated(tools, run):
    """Each tool's results over ROUNDS rounds, each tool first in turn."""
    res = {t: [] for t in tools}
    for rnd in range(ROUNDS):
        for tool in tools[rnd % 2:] + tools[:rnd % 2]:
            res[tool].append(run[tool]())
    return res


def cpu(work, db, tmp):
    jobfile = os.path.join(tmp, "cpuio.fio")
    with open(jobfile, "w") as f:
        f.write(CPUIO)
    res = alternated(["fio", "fsbench"], {"fio": lambda: fio(work, jobfile),
                                          "fsbench": lambda: fsbench(work, db, jobfile)})
    print(f"\n== cpuio: {ROUNDS} rounds, medians; usr/sys CPU % per job, fsbench vs fio ==")
    for i in range(len(res["fio"][0])):
        med = {t: {k: statistics.median(r[i][k] for r in rs) for k in ("usr_cpu", "sys_cpu")}
               for t, rs in res.items()}
        a, b = med["fsbench"], med["fio"]
        name = res["fio"][0][i]["jobname"]
        print(f"{name:10} job {i}: usr {a['usr_cpu']:5.1f} / {b['usr_cpu']:5.1f} "
              f"({a['usr_cpu'] - b['usr_cpu']:+.1f})  sys {a['sys_cpu']:4.1f} / {b['sys_cpu']:4.1f}"
              f"  (cpuload={CPULOAD})", flush=True)


def latency(work, db, tmp):
    print(f"\n== latency_target (p99, 50 ms windows), libaio iodepth 32 on tmpfs: {ROUNDS} rounds,"
          " medians; depth found and final IOPS, fsbench / fio ==")
    for target in TARGETS:
        jobfile = os.path.join(tmp, f"lat{target}.fio")
        with open(jobfile, "w") as f:
            f.write(LATENCY.format(runtime=RUNTIME, target=target))
        res = alternated(["fio", "fsbench"], {"fio": lambda: fio(work, jobfile)[0],
                                              "fsbench": lambda: fsbench(work, db, jobfile)[0]})
        depth = {t: [r["latency_depth"] for r in rs] for t, rs in res.items()}
        iops = {t: statistics.median(r["read"]["iops"] for r in rs) for t, rs in res.items()}
        print(f"target {target:6} us: depth {depth['fsbench']} / {depth['fio']}  "
              f"IOPS {iops['fsbench']:9.0f} / {iops['fio']:9.0f}", flush=True)


def main():
    status = fio_against_fsbench("fio_lat_cpu", FIO, FSBENCH)
    if status is not None:
        return status
    with tempfile.TemporaryDirectory(prefix="fio-lat-cpu.", dir="/var/tmp") as tmp:
        db = os.path.join(tmp, "results.db")
        work = tempfile.mkdtemp(prefix="fio-lat-cpu.", dir="/dev/shm")
        try:
            cpu(work, db, tmp)
            latency(work, db, tmp)
        finally:
            shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
