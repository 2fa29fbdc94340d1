#!/usr/bin/env python3
"""What strace's stops cost a captured program, measured with BPF beside strace: whether
taking them out of the capture's times (per call) would give the program's own pace, which
think mode replays. Each program of bench/replay.py is run as itself on tmpfs, then under
strace with capture's options while bench/strace_stops.bt watches the traced tasks, round
by round (both see the same load), and the medians shown:

  alone      the program's wall and CPU time on its own
  capture    its wall time under strace, as a multiple of alone
  stopped    the time its tasks spent stopped by strace (off CPU, all tasks added up), and
             per traced call; `+path` adds the kernel's on-CPU path into and out of each
             stop that tracepoints bracket
  left       (capture - stopped) / alone, and the same less +path: what a per-call
             correction would leave of the program's time (1.0: its own pace). Stops of
             tasks running at the same time overlap, so for concurrent programs (python's
             threads, make -j2) the sum overstates what the wall time held and this is no
             estimate (shown in brackets)
  CPU        the traced tasks' on-CPU time as a multiple of the program's own: what
             running under strace adds to the program's own instructions and calls, which no
             correction of the stops takes out

  ROUNDS=3       rounds
  PROGRAMS=git,sqlite3,tar,python,make
  SMALL=1        smaller inputs (a smoke run)

Needs root, bpftrace and a kernel with BTF, on x86_64 (the traced set's numbers are read
from asm/unistd_64.h); run on a quiet machine for figures to keep.
"""
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import capture_options  # noqa: E402  (capture's strace options)
import replay  # noqa: E402  (its programs and helpers)

ROUNDS = int(os.environ.get("ROUNDS", "3"))
UNISTD = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
# Concurrent tasks' stops overlap: their sum is no measure of the wall time they held.
CONCURRENT = {"python", "make"}


def script(work):
    """The watcher's script with the traced set's numbers in its BEGIN block."""
    numbers = {}
    with open(UNISTD) as f:
        for line in f:
            m = re.match(r"#define __NR_(\w+) (\d+)", line)
            if m:
                numbers[m.group(1)] = int(m.group(2))
    names = [n.lstrip("?") for n in capture_options.TRACE.split(",")]
    begin = "BEGIN\n{\n" + "".join(f"  @traced[{numbers[n]}] = 1;\n"
                                    for n in names if n in numbers) + "}\n"
    path = os.path.join(work, "stops.bt")
    with open(os.path.join(HERE, "strace_stops.bt")) as f, open(path, "w") as out:
        out.write(begin + f.read())
    return path


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def alone(setup, cmd, work):
    """The program on its own: wall and CPU seconds."""
    before = children_cpu()
    root = replay.fresh(os.path.join(work, "plain"))
    if setup:
        replay.sh(setup, root)
    setup_cpu = children_cpu() - before
    start = time.monotonic()
    replay.sh(cmd, root)
    wall = time.monotonic() - start
    return wall, children_cpu() - before - setup_cpu


def stop(watcher):
    """Stops bpftrace: SIGINT again until it ends (0.17 misses one that comes while it
    prints, then waits for an event that never comes), SIGKILL after a minute."""
    for _ in range(120):
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.communicate(timeout=0.5)
            return
        except subprocess.TimeoutExpired:
            pass
    watcher.kill()
    watcher.communicate()


def watched(setup, cmd, work, bt):
    """The program under strace, the watcher attached: its wall time and the watcher's
    figures (stopped, +path, CPU in s; traced calls) and strace's lines."""
    root = replay.fresh(os.path.join(work, "root"))
    if setup:
        replay.sh(setup, root)
    events = os.path.join(work, "stops.txt")
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    watcher = subprocess.Popen(["bpftrace", "-o", events, bt, str(os.getpid())],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=env)
    said = []
    for line in watcher.stderr:
        if "__BPFTRACE_NOTIFY_PROBES_ATTACHED" in line:
            break
        said.append(line)
    else:
        sys.exit("bpftrace did not attach:\n" + "".join(said))
    raw = os.path.join(work, "strace.txt")
    strace = (["env", "TZ=UTC", "strace"] + capture_options.COMMON
              + ["-y", "-e", "trace=" + capture_options.TRACE, "-o", raw, "--"])
    start = time.monotonic()
    subprocess.run(strace + ["sh", "-c", cmd], cwd=root, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    # bpftrace drops what it has not printed when it is told to stop: let it catch up.
    time.sleep(1)
    stop(watcher)
    stopped = path = cpu = calls = 0
    with open(events) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "Q":
                stopped, path, cpu = stopped + int(w[2]), path + int(w[3]), cpu + int(w[4])
                calls += int(w[5])
    with open(raw, errors="replace") as f:
        lines = sum(1 for line in f if not line.rstrip().endswith("<unfinished ...>")
                    and " +++ " not in line)
    return wall, stopped / 1e9, path / 1e9, cpu / 1e9, calls, lines


def print_figures(name, key, rows):
    """The medians of the rounds' figures (each round: alone's, watched's)."""
    def med(figure):
        return statistics.median(figure(a, w) for a, w in rows)
    own, own_cpu = med(lambda a, w: a[0]), med(lambda a, w: a[1])
    under, stopped, path = (med(lambda a, w, i=i: w[i]) for i in range(3))
    calls = med(lambda a, w: w[4])
    left = med(lambda a, w: (w[0] - w[1]) / a[0])
    left_path = med(lambda a, w: (w[0] - w[2]) / a[0])
    cpu = med(lambda a, w: w[3] / a[1])
    fmt = "[{:.2f}]" if key in CONCURRENT else "{:.2f}"
    print(f"\n{name}: alone {own:.3f} s, CPU {own_cpu:.3f} s "
          f"(load {os.getloadavg()[0]:.1f})\n"
          f"  capture {under / own:.1f} x; stopped {stopped:.3f} s "
          f"({stopped / max(calls, 1) * 1e6:.1f} µs a call), +path {path:.3f} s "
          f"({path / max(calls, 1) * 1e6:.1f} µs a call)\n"
          f"  left {fmt.format(left)} x, less +path {fmt.format(left_path)} x; "
          f"CPU {cpu:.1f} x; calls {calls:,.0f} (strace's lines: "
          f"{', '.join(str(w[5]) for _, w in rows)})")


def main():
    if os.geteuid() != 0:
        sys.exit("run as root: bpftrace needs it")
    chosen = os.environ.get("PROGRAMS", ",".join(replay.PROGRAMS)).split(",")
    print(f"load average before: {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, medians")
    for key in chosen:
        name, prepare = replay.PROGRAMS[key]
        with tempfile.TemporaryDirectory(prefix="fsbench-stops.", dir="/dev/shm") as work:
            bt = script(work)
            setup, cmd = prepare(replay.fresh(os.path.join(work, "src")))
            rows = [(alone(setup, cmd, work), watched(setup, cmd, work, bt))
                    for _ in range(ROUNDS)]
            print_figures(name, key, rows)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
