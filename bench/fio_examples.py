#!/usr/bin/env python3
"""fio's own example job files through `fsbench fio`, as written, scaled only by --cap:
per job file, `ran` (with each workload's read and write IOPS) or `refused` (fsbench's
reason: the option or engine and its line), then the share that ran among the files that
need no network, GPU, RDMA, SCSI generic, NVMe passthrough or zoned device (the target is
90%).

FIO_EXAMPLES is the `examples/` directory of a fio checkout (fio-3.33's: `git checkout
fio-3.33` in a clone of fio's repository). FSBENCH (default target/release/fsbench), CAP
(default size=16m,runtime=2s) and ONLY=TEXT (the files whose name holds TEXT) as in the
other benches. Each file runs once (--runs 1) in a fresh directory on FS (default tmpfs,
in /dev/shm; ext4 or xfs: a fresh IMAGE_MIB MiB sparse loop image, default 4096, made and mounted
by the bench in its own directory, unmounted and removed at the end), with at most TIMEOUT
seconds (default 120) before it counts as hung. exec.fio runs /usr/sbin/turbostat, in Debian 12's linux-cpupower package (`apt-get install
linux-cpupower`; the bench installs nothing): without it fsbench refuses the file, naming
the program and its line; with it the file runs even where turbostat cannot read the
CPU's counters (in a VM it exits at once, status 1, and the run's notes say so, as fio
reports err=0 for it). Some files need a filesystem: e4defrag's
engine moves extents on ext4 only; 512-byte direct I/O needs a filesystem that takes it
(tmpfs does from Linux 6.6 on). A group whose jobs use the files an earlier group of its file made (the same
`filename`: surface-scan, ssd-test, falloc, e4defrag…) runs that group again first, untimed,
in each of its runs, since fsbench runs every group on fresh files: such files take longer.
surface-scan's fill is bounded by CAP's size like any job (bench/fio_surface_scan.py runs it
uncapped, filling small filesystems, against fio).

A file that names an absolute directory (`directory=/scratch`, `filename=/tmp/data`) runs
as written: in a private mount namespace of its own (`unshare -m`, root only) a tmpfs (or,
with FS=ext4/xfs, a fresh directory of the image, bound) is mounted on that directory, and
fsbench is given it (`--dir`). A directory missing on the
host is made for the mount and removed afterwards; nothing else on the host changes, and
the mount ends with the namespace. A file that names a block device (`filename=/dev/sdb`)
runs on a loop device over a sparse image of DEVICE_MIB MiB (default 1024: the capped
jobs of cross-stripe-verify, 30 copies `offset_increment` apart, reach past 480 MiB; a
sparse image costs only what is written) in the bench's own directory: in the namespace a private tmpfs is mounted on /dev, holding the usual
character devices and the loop device's node under the file's name, and fsbench is given
it (`--target-device`); the loop device is detached and the image removed afterwards. Keep FSBENCH out of the
directories the files name (/tmp among them): the namespace's tmpfs hides what lies there.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.abspath(os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench")))
CAP = os.environ.get("CAP", "size=16m,runtime=2s")
TIMEOUT = int(os.environ.get("TIMEOUT", "120"))
DEVICE_MIB = int(os.environ.get("DEVICE_MIB", "1024"))
FS = os.environ.get("FS", "tmpfs")
IMAGE_MIB = int(os.environ.get("IMAGE_MIB", "4096"))

# What the namespace's /dev holds besides the device: fsbench and its children open these.
PRIVATE_DEV = """set -e
mount -t tmpfs -o mode=755 fio-example-dev /dev
for n in null:3 zero:5 full:7 random:8 urandom:9; do mknod -m 666 /dev/${n%:*} c 1 ${n#*:}; done
ln -s /proc/self/fd /dev/fd
mkdir /dev/shm && mount -t tmpfs fio-example-shm /dev/shm
mkdir -p "$(dirname "$1")" && mknod -m 660 "$1" b "$2" "$3"
shift 3
exec "$@"
"""

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


def absolute_dir(text):
    """The absolute directory the job file's files are in (`directory=/X`, or the directory
    of `filename=/X/NAME`), outside /dev; None without one."""
    for m in re.finditer(r"^\s*(filename|directory)\s*=\s*([^;#\s]+)", text, re.M):
        key, value = m.groups()
        for name in value.split(":"):
            if not name.startswith("/") or name.startswith("/dev/"):
                continue
            # pmemblk's PATH,BSIZE,FSIZEMiB: the pool's sizes are no part of its path.
            name = re.sub(r",\d+,\d+$", "", name)
            return os.path.normpath(name if key == "directory" else os.path.dirname(name))
    return None


def device_name(text):
    """The block device the job file names (`filename=/dev/X`, not /dev/null or /dev/zero),
    or None."""
    for m in re.finditer(r"^\s*filename\s*=\s*([^;#\s]+)", text, re.M):
        name = m.group(1)
        if name.startswith("/dev/") and name not in ("/dev/null", "/dev/zero"):
            return name
    return None


def loop_device(image):
    """A loop device over a fresh sparse image: its path, major and minor."""
    with open(image, "wb") as f:
        f.truncate(DEVICE_MIB << 20)
    dev = subprocess.run(["losetup", "--find", "--show", image], capture_output=True,
                         text=True, check=True).stdout.strip()
    rdev = os.stat(dev).st_rdev
    return dev, os.major(rdev), os.minor(rdev)


def made_for(target):
    """Makes `target`'s missing directories on the host (mount points); the topmost made,
    to remove afterwards, or None."""
    top, path = None, target
    while not os.path.exists(path):
        top, path = path, os.path.dirname(path)
    if top:
        os.makedirs(target)
    return top


def unmade(target, top):
    """Removes the directories `made_for` made, from `target` up to `top`."""
    path = target
    while top:
        os.rmdir(path)
        if path == top:
            break
        path = os.path.dirname(path)


def filesystem_image(bench_dir):
    """With FS=ext4 or xfs: a fresh image of that filesystem mounted in `bench_dir`, its
    mount point and loop device; with tmpfs, /dev/shm and None."""
    if FS == "tmpfs":
        return "/dev/shm", None
    if FS not in ("ext4", "xfs") or os.geteuid() != 0:
        sys.exit(f"fio_examples: FS must be tmpfs, ext4 or xfs (the last two as root): {FS}")
    image = os.path.join(bench_dir, "fs.img")
    with open(image, "wb") as f:
        f.truncate(IMAGE_MIB << 20)
    # ext4 with an inode per 4 KiB: filecreate-ioengine makes 500,000 files.
    subprocess.run([f"mkfs.{FS}", "-q", *(["-F", "-i", "4096"] if FS == "ext4" else ["-f"]), image],
                   check=True, capture_output=True)
    mnt = os.path.join(bench_dir, "mnt")
    os.mkdir(mnt)
    loop = subprocess.run(["losetup", "--find", "--show", image], capture_output=True,
                          text=True, check=True).stdout.strip()
    subprocess.run(["mount", loop, mnt], check=True)
    return mnt, loop


def unmount_image(mnt, loop):
    """Undoes `filesystem_image`."""
    if loop:
        subprocess.run(["umount", mnt], check=False)
        subprocess.run(["losetup", "-d", loop], check=False)


def run(path, db, work, target=None, device=None):
    # fsbench's own document: under `fsbench fio`, --output-format json is fio's.
    bench_dir = os.path.dirname(db)
    exported = os.path.join(bench_dir, "suite.json")
    if os.path.exists(exported):
        os.remove(exported)
    args = [FSBENCH, "--db", db, "fio", path, "-q", "--runs", "1", "--cap", CAP,
            "--export-json", exported, "--dir", target or work]
    top, loop = None, None
    if device:
        # The loop device's node under the file's name, in a /dev of the namespace's own;
        # the run's directory in the bench's, which the private /dev does not hide.
        image = os.path.join(bench_dir, "device.img")
        loop, major, minor = loop_device(image)
        args[-1] = tempfile.mkdtemp(prefix="run.", dir=bench_dir)
        args += ["--target-device", device]
        args = ["unshare", "-m", "--propagation", "private", "sh", "-c", PRIVATE_DEV, "sh",
                device, str(major), str(minor)] + args
    elif target:
        # A tmpfs (or the run's directory of the image) on the job file's own directory,
        # seen by fsbench alone.
        top = made_for(target)
        if FS == "tmpfs":
            mount = 'mount -t tmpfs -o size=2g fio-example "$1" && shift && exec "$@"'
            args = ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh",
                    target] + args
        else:
            mount = 'mount --bind "$2" "$1" && shift 2 && exec "$@"'
            args = ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh",
                    target, work] + args
    try:
        # In the bench's directory: the log files a job file asks for (write_bw_log) are
        # written where fsbench runs, as fio's.
        out = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT,
                             cwd=bench_dir)
    except subprocess.TimeoutExpired:
        return "hung", f"no end after {TIMEOUT} s"
    finally:
        unmade(target, top)
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False)
            os.remove(image)
            shutil.rmtree(args[args.index("--dir") + 1], ignore_errors=True)
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
    # The database and exports in /var/tmp: no example's directory hides them.
    with tempfile.TemporaryDirectory(prefix="fio-examples.", dir="/var/tmp") as tmp:
        db = os.path.join(tmp, "results.db")
        mnt, loop = filesystem_image(tmp)
        try:
            considered = run_all(examples, files, db, mnt, counts)
        finally:
            unmount_image(mnt, loop)
    share = counts["ran"] / considered * 100 if considered else 0.0
    print(f"\n{counts['ran']} of {considered} job files that need no network, GPU, RDMA, SCSI "
          f"generic, NVMe passthrough or zoned device ran as written ({share:.0f}%; target 90%); "
          f"{counts['refused']} refused, {counts['hung']} hung; --cap {CAP}; on {FS}")
    return 0


def run_all(examples, files, db, mnt, counts):
    """Runs each file (each in a fresh directory of `mnt`), printing what it did, counting
    into `counts`; how many were not excluded."""
    considered = 0
    for name in files:
        path = os.path.join(examples, name)
        with open(path, errors="replace") as f:
            text = f.read()
        why = excluded(text)
        if why:
            print(f"{name:36} excluded ({why})")
            continue
        considered += 1
        target = device = None
        if os.geteuid() == 0 and shutil.which("unshare"):
            target, device = absolute_dir(text), device_name(text)
        work = tempfile.mkdtemp(prefix="fio-example.", dir=mnt)
        try:
            status, detail = run(path, db, work, target, device)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        counts[status] += 1
        print(f"{name:36} {status}: {detail}", flush=True)
    return considered


if __name__ == "__main__":
    sys.exit(main())
