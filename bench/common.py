"""Helpers shared by the benchmarks."""
import contextlib
import os
import subprocess


def settle():
    """Dirty data written back and every cache dropped (root only; loop images' host caches too)."""
    subprocess.run(["sync"], check=True)
    if os.geteuid() == 0:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


@contextlib.contextmanager
def fresh_ext4(tmp, size=8 << 30, direct_io=False):
    """A fresh ext4 on a sparse loop image in `tmp`, mounted; yields the mount point (root only).
    With `direct_io` the loop device bypasses the host's page cache (losetup --direct-io)."""
    image, mnt = os.path.join(tmp, "ext4.img"), os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    with open(image, "wb") as f:
        f.truncate(size)
    dio = ["--direct-io=on"] if direct_io else []
    loop = subprocess.run(["losetup", "--find", "--show", *dio, image], check=True, capture_output=True, text=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop], check=True)
        subprocess.run(["mount", loop, mnt], check=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", mnt], check=True)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True)
        os.remove(image)
