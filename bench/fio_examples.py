#!/usr/bin/env python3
"""fio's own example job files through `fsbench fio`, as written, scaled only by --cap:
per job file, `ran` (with each workload's read and write IOPS) or `refused` (fsbench's
reason: the option or engine and its line), then the share that ran among the files that
need no network, GPU, RDMA, SCSI generic, NVMe passthrough or zoned device (the target is
90%).

FIO_EXAMPLES is the `examples/` directory of a fio checkout (fio-3.33's: `git checkout
fio-3.33` in a clone of fio's repository). FSBENCH (default target/release/fsbench), CAP
(default size=16m,runtime=2s) and ONLY=TEXT (the files whose name holds TEXT) as in the
other benches. Each file runs once (--runs 1) in a fresh directory on tmpfs (/dev/shm),
with at most TIMEOUT seconds (default 120) before it counts as hung.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
CAP = os.environ.get("CAP", "size=16m,runtime=2s")
TIMEOUT = int(os.environ.get("TIMEOUT", "120"))

# Engines (and options) that need a device or a service this bench cannot give: network,
# GPU, RDMA, SCSI generic, NVMe passthrough, zoned devices.
EXCLUDED_ENGINES = {
    "net", "netsplice", "rdma", "http", "nbd", "nfs", "rados", "rbd", "libiscsi", "libhdfs",
    "gfapi", "gfapi_async", "dfs", "ime_psync", "ime_psyncv", "ime_aio", "libcufile", "sg",
    "io_uring_cmd", "xnvme", "libzbc", "librpma_apm_client", "librpma_apm_server",
    "librpma_gpspm_client", "librpma_gpspm_server",
}
EXCLUDED_OPTIONS = re.compile(r"^\s*(zonemode\s*=\s*zbd|gpu_dev_id|mem\s*=\s*cudamalloc)", re.M)


def excluded(text):
    """Why the file needs what this bench excludes, or None."""
    for m in re.finditer(r"^\s*ioengine\s*=\s*([\w-]+)", text, re.M):
        if m.group(1) in EXCLUDED_ENGINES:
            return f"engine {m.group(1)}"
    m = EXCLUDED_OPTIONS.search(text)
    if m:
        return m.group(1).strip()
    # A file meant for an engine given on fio's command line (its comments say which).
    m = re.search(r"--ioengine=(xnvme)", text)
    return f"engine {m.group(1)} (on the command line)" if m else None


def run(path, db, work):
    # fsbench's own document: under `fsbench fio`, --output-format json is fio's.
    exported = os.path.join(os.path.dirname(db), "suite.json")
    if os.path.exists(exported):
        os.remove(exported)
    args = [FSBENCH, "--db", db, "fio", path, "-q", "--runs", "1", "--cap", CAP,
            "--export-json", exported, "--dir", work]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "hung", f"no end after {TIMEOUT} s"
    if out.returncode != 0:
        lines = [l for l in out.stderr.splitlines() if l.strip()]
        return "refused", lines[-1] if lines else f"exit {out.returncode}"
    with open(exported) as f:
        doc = json.load(f)
    figures = []
    for r in doc["runs"]:
        io = next((p for p in r["phases"] if p["name"] == "io"), None)
        if io is None:
            continue
        for f in io.get("figures", []):
            dims = [d.get("text") for d in f.get("dims", [])]
            if f["name"] == "iops" and len(dims) == 1:
                figures.append(f"{dims[0]} {f['value']:.0f} IO/s")
    return "ran", "; ".join(figures)


def main():
    examples = os.environ.get("FIO_EXAMPLES")
    if not examples or not os.path.isdir(examples):
        print("fio_examples: set FIO_EXAMPLES to a fio checkout's examples/ directory")
        return 1
    if not os.path.exists(FSBENCH):
        print(f"fio_examples: build fsbench first (cargo build --release): {FSBENCH} missing")
        return 1
    files = sorted(f for f in os.listdir(examples) if f.endswith(".fio"))
    files = [f for f in files if os.environ.get("ONLY", "") in f]
    counts = {"ran": 0, "refused": 0, "hung": 0}
    considered = 0
    with tempfile.TemporaryDirectory(prefix="fio-examples.") as tmp:
        db = os.path.join(tmp, "results.db")
        for name in files:
            path = os.path.join(examples, name)
            with open(path, errors="replace") as f:
                why = excluded(f.read())
            if why:
                print(f"{name:36} excluded ({why})")
                continue
            considered += 1
            work = tempfile.mkdtemp(prefix="fio-example.", dir="/dev/shm")
            try:
                status, detail = run(path, db, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            counts[status] += 1
            print(f"{name:36} {status}: {detail}", flush=True)
    share = counts["ran"] / considered * 100 if considered else 0.0
    print(f"\n{counts['ran']} of {considered} job files that need no network, GPU, RDMA, SCSI "
          f"generic, NVMe passthrough or zoned device ran as written ({share:.0f}%; target 90%); "
          f"{counts['refused']} refused, {counts['hung']} hung; --cap {CAP}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
