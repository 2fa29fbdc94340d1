"""Helpers shared by the benchmarks."""
import contextlib
import os
import shutil
import subprocess
import time


def settle():
    """Dirty data written back and every cache dropped (root only; loop images' host caches too)."""
    subprocess.run(["sync"], check=True)
    if os.geteuid() == 0:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def unmount(mnt, patience=10.0):
    """Unmounts `mnt`, retrying while it is busy: a process's io_uring ring is torn down after
    the process ends, and holds the mount a moment longer."""
    deadline = time.monotonic() + patience
    while subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            subprocess.run(["umount", mnt], check=True)
        time.sleep(0.1)


@contextlib.contextmanager
def fresh_ext4(tmp, size=8 << 30, direct_io=False, written=False):
    """A fresh ext4 on a sparse loop image in `tmp`, mounted; yields the mount point (root only).
    With `direct_io` the loop device bypasses the host's page cache (losetup --direct-io).
    With `written` the image is written whole first (zeros), not sparse: a write to a part of
    a sparse image never written before also allocates the host's blocks, and runs slower
    than one to a part written before (1.4-1.7 GiB/s against 2.0-2.7 here), so which tool
    wrote first would decide a comparison. Such an image is made without mkfs's discard,
    which would punch the image's blocks out again (an 8 GiB image written whole held 49 MiB
    per GiB after mkfs.ext4), and no later discard reaches it: ext4 mounts without one."""
    image, mnt = os.path.join(tmp, "ext4.img"), os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    if written:
        subprocess.run(["dd", "if=/dev/zero", f"of={image}", "bs=4M", f"count={size >> 22}",
                        "oflag=direct", "status=none"], check=True)
    with open(image, "ab") as f:
        f.truncate(size)
    dio = ["--direct-io=on"] if direct_io else []
    loop = subprocess.run(["losetup", "--find", "--show", *dio, image], check=True, capture_output=True, text=True).stdout.strip()
    try:
        extended = "lazy_itable_init=0,lazy_journal_init=0" + (",nodiscard" if written else "")
        subprocess.run(["mkfs.ext4", "-q", "-F", "-E", extended, loop], check=True)
        subprocess.run(["mount", loop, mnt], check=True)
        try:
            yield mnt
        finally:
            unmount(mnt)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True)
        os.remove(image)


def fio_against_fsbench(bench, fio, fsbench):
    """Says whether `bench` can compare `fio` with `fsbench` and prints its header line: None
    when both are there, else the exit status (0: fio missing, a skip; 1: fsbench not built)."""
    if shutil.which(fio) is None:
        print(f"{bench}: skipped: `{fio}` not found (apt install fio, or FIO=/path/to/fio)")
        return 0
    if not os.path.exists(fsbench):
        print(f"{bench}: build fsbench first (cargo build --release): {fsbench} missing")
        return 1
    print(subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip(),
          f"against {fsbench}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return None
