#!/usr/bin/env python3
"""Think mode's pace against the program's own: each program of bench/replay.py run as
itself on tmpfs, captured, and its capture replayed in think mode on tmpfs, round by round
(the program, its capture and its replay see the same load), the medians shown: the
program's own time, capture ÷ program, think ÷ program (the target: 0.8–1.2), and
strace's cost per call as capture found it. Each tracer of TRACERS captures each round; with
FSBENCH_B, a second fsbench captures each round too and its traces are replayed by the first:
an A/B of two captures' schedules.

  ROUNDS=3       rounds
  PROGRAMS=git,sqlite3,tar,python,make
  SMALL=1        smaller inputs (a smoke run)
  FSBENCH=...    the fsbench binary (default: target/release/fsbench)
  FSBENCH_B=...  a second fsbench whose captures are compared
  TRACERS=strace,bpf   the tracers capture runs with, side by side

Run as root (think mode's run mounts a tmpfs), on a quiet machine for figures to keep.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay  # noqa: E402  (its programs and helpers)

ROUNDS = int(os.environ.get("ROUNDS", "3"))
FSBENCH = os.environ.get("FSBENCH", os.path.join(replay.ROOT, "target/release/fsbench"))


TRACERS = os.environ.get("TRACERS", "strace,bpf").split(",")


def captured(binary, tracer, setup, cmd, work, name):
    """One capture in a fresh root: the trace, its wall time, strace's µs a call (0: bpf)."""
    root = replay.fresh(os.path.join(work, "root"))
    if setup:
        replay.sh(setup, root)
    trace = os.path.join(work, f"{name}.trace")
    out = subprocess.run([binary, "capture", "-o", trace, "--tracer", tracer, "--", "sh", "-c",
                          cmd], cwd=root, check=True, capture_output=True, text=True).stdout
    took = float(re.search(r"took ([0-9.]+) s under capture", out).group(1))
    per_call = re.search(r"strace: ([0-9.]+) µs a call", out)
    return trace, took, float(per_call.group(1)) if per_call else 0.0


def think(trace, work):
    """The trace's think replay on tmpfs: its phase's seconds. The page cache is kept (a
    replay on tmpfs reads nothing from a disk): dropped, the next round's program loaded its
    libraries from the disk again, and python's 30 ms took 50."""
    db = os.path.join(work, "think.db")
    out = subprocess.run([FSBENCH, "--db", db, "run", "--fs", "tmpfs", "-n", "1", "-q",
                          "--no-drop-caches",
                          "--output-format", "json", "-w", f"replay:trace={trace},mode=think"],
                         cwd=work, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["runs"][0]["phases"][0]["elapsed_ns"] / 1e9


def main():
    if os.geteuid() != 0:
        sys.exit("run as root: think mode's run mounts a tmpfs")
    captures = {f"A {t}": (FSBENCH, t) for t in TRACERS}
    if os.environ.get("FSBENCH_B"):
        captures.update({f"B {t}": (os.environ["FSBENCH_B"], t) for t in TRACERS})
    chosen = os.environ.get("PROGRAMS", ",".join(replay.PROGRAMS)).split(",")
    print(f"load average before: {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, medians; "
          f"A: {FSBENCH}" + (f", B: {os.environ['FSBENCH_B']}" if "FSBENCH_B" in os.environ else ""))
    for key in chosen:
        name, prepare = replay.PROGRAMS[key]
        with tempfile.TemporaryDirectory(prefix="fsbench-think.", dir="/dev/shm") as work:
            setup, cmd = prepare(replay.fresh(os.path.join(work, "src")))
            own, rows = [], {k: ([], [], []) for k in captures}
            for _ in range(ROUNDS):
                own += replay.plain_times(setup, cmd, work, 1)
                for k, (binary, tracer) in captures.items():
                    trace, took, per_call = captured(binary, tracer, setup, cmd, work,
                                                     k.replace(" ", "-"))
                    rows[k][0].append(took)
                    rows[k][1].append(per_call)
                    rows[k][2].append(think(trace, work))
            own = statistics.median(own)
            print(f"\n{name}: {own:.3f} s on its own (load {os.getloadavg()[0]:.1f})")
            for k, (took, per_call, paced) in rows.items():
                print(f"  {k:<9} capture ÷ program {statistics.median(took) / own:6.2f}, "
                      f"think ÷ program {statistics.median(paced) / own:5.2f} "
                      f"(each round: {', '.join(f'{t / own:.2f}' for t in paced)}), "
                      f"strace {statistics.median(per_call):.1f} µs a call")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
