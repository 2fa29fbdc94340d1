#!/usr/bin/env python3
"""fio's examples/surface-scan.fio as written, in fio and in `fsbench fio`, on the same kind
of small filesystem made afresh for every run: its write phase fills the filesystem
(`fill_device`, 64 KiB direct writes with `verify=meta` headers), its verify phase (a group
of its own, no size) reads the whole file back and checks every block. Per filesystem
(FSES, default ext4,xfs,tmpfs; IMAGE_MIB MiB each, default 512: mkfs.xfs wants 300 MB) and round (ROUNDS, default
3, each tool first in every other round), each tool's bytes written, bytes read and
verified, errors and exit status, and the bandwidth of each phase; then the medians of
fsbench's bandwidth over fio's (indicative only on a busy machine: both tools' direct I/O
goes through the same loop device and host cache).

Root only: the bench makes each filesystem itself (a sparse image on a loop device, or a
tmpfs), mounted in its own temporary directory, and removes it after the run; fsbench runs
on it with --dir (its run's fresh directory there), fio in it. fio's path is in FIO (default
`fio`), fsbench's in FSBENCH (default target/release/fsbench); SURFACE_SCAN is the job file
(default examples/fio/surface-scan.fio: fio's, its options as written).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

from common import fio_against_fsbench, unmount

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FIO = os.environ.get("FIO", "fio")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
IMAGE_MIB = int(os.environ.get("IMAGE_MIB", "512"))
FSES = os.environ.get("FSES", "ext4,xfs,tmpfs").split(",")

# fio 3.33's examples/surface-scan.fio, its options as written.
SURFACE_SCAN = os.environ.get("SURFACE_SCAN", os.path.join(ROOT, "examples/fio/surface-scan.fio"))


def fresh_fs(fs, tmp):
    """A fresh `fs` of IMAGE_MIB MiB mounted in `tmp`: its mount point and loop device."""
    mnt = tempfile.mkdtemp(prefix="mnt.", dir=tmp)
    if fs == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={IMAGE_MIB}m", "scan", mnt], check=True)
        return mnt, None
    image = os.path.join(tmp, "fs.img")
    with open(image, "wb") as f:
        f.truncate(IMAGE_MIB << 20)
    subprocess.run([f"mkfs.{fs}", "-q", "-f" if fs == "xfs" else "-F", image], check=True,
                   capture_output=True)
    loop = subprocess.run(["losetup", "--find", "--show", image], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(["mount", loop, mnt], check=True)
    return mnt, loop


def remove_fs(mnt, loop, tmp):
    unmount(mnt)
    os.rmdir(mnt)
    if loop:
        subprocess.run(["losetup", "-d", loop], check=True)
        os.remove(os.path.join(tmp, "fs.img"))


def jobs_of(stdout):
    """The `jobs` of fio's JSON (after any line fio prints before it)."""
    return json.loads(stdout[stdout.index("{"):])["jobs"] if "{" in stdout else []


def one(tool, fs, tmp, jobfile):
    """One run of `tool` on a fresh `fs`: (exit status, jobs, verified blocks or None)."""
    mnt, loop = fresh_fs(fs, tmp)
    try:
        if tool == "fio":
            out = subprocess.run([FIO, "--output-format=json", jobfile], capture_output=True,
                                 text=True, cwd=mnt)
            return out.returncode, jobs_of(out.stdout), None, out.stderr
        exported = os.path.join(tmp, "doc.json")
        out = subprocess.run([FSBENCH, "--db", os.path.join(tmp, "db"), "fio", "-q", "--runs", "1",
                              "--output-format", "json", "--export-json", exported, "--dir", mnt,
                              jobfile], capture_output=True, text=True)
        verified = None
        if out.returncode == 0:
            with open(exported) as f:
                doc = json.load(f)
            verified = sum(fig["value"] for r in doc["runs"] for p in r["phases"]
                           for fig in p.get("figures", []) if fig["name"] == "verified blocks")
        return out.returncode, jobs_of(out.stdout), verified, out.stderr
    finally:
        remove_fs(mnt, loop, tmp)


def row(tool, status, jobs, verified):
    """What a run did: bytes, errors, bandwidths (MiB/s) of its two phases."""
    w = jobs[0]["write"] if jobs else {}
    r = jobs[1]["read"] if len(jobs) > 1 else {}
    errors = [j.get("error", 0) for j in jobs]
    return {
        "tool": tool, "status": status, "written": w.get("io_bytes", 0),
        "read": r.get("io_bytes", 0), "errors": errors, "verified": verified,
        "write_mib_s": w.get("bw_bytes", 0) / 2**20, "read_mib_s": r.get("bw_bytes", 0) / 2**20,
    }


def main():
    code = fio_against_fsbench("fio_surface_scan", FIO, FSBENCH)
    if code is not None:
        return code
    if os.geteuid() != 0:
        print("fio_surface_scan: run as root (it makes and mounts the filesystems)")
        return 1
    jobfile = os.path.abspath(SURFACE_SCAN)
    with tempfile.TemporaryDirectory(prefix="surface-scan.", dir="/var/tmp") as tmp:
        for fs in FSES:
            rows = []
            for rnd in range(ROUNDS):
                for tool in (("fio", "fsbench") if rnd % 2 == 0 else ("fsbench", "fio")):
                    status, jobs, verified, err = one(tool, fs, tmp, jobfile)
                    r = row(tool, status, jobs, verified)
                    rows.append(r)
                    why = "" if status == 0 else f"  ({err.strip().splitlines()[-1:]})"
                    print(f"{fs:5} round {rnd + 1} {tool:7} exit {status}: wrote {r['written']} B, "
                          f"read {r['read']} B (fsbench's verified blocks of 512 B: {verified}), "
                          f"errors {r['errors']}, write {r['write_mib_s']:.0f} MiB/s, "
                          f"read {r['read_mib_s']:.0f} MiB/s{why}", flush=True)
            ratios = {}
            for phase in ("write_mib_s", "read_mib_s"):
                med = {t: statistics.median(r[phase] for r in rows if r["tool"] == t)
                       for t in ("fio", "fsbench")}
                ratios[phase] = med["fsbench"] / med["fio"] if med["fio"] else float("nan")
            print(f"{fs:5} medians, fsbench / fio: write {ratios['write_mib_s']:.2f}, "
                  f"read+verify {ratios['read_mib_s']:.2f} (load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
