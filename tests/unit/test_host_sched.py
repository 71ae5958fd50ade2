#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_host_sched.py HOST_SCHED_PY - tests/bench/host_sched.py on a made-up
`perf sched timehist` output whose waits and their causes are known.

What must hold: a vCPU thread's wait is put in its delay bucket; a wait
over --over-us is blamed on exactly the runs that overlapped it on that
core, each for the overlap; a wait under the threshold blames nobody;
threads are found by name without --thread; input with no rows is refused
with a message that names the file."""
import os
import subprocess
import sys
import tempfile

host_sched_py = sys.argv[1]
failures = []

# time [cpu] task wait(ms) sch-delay(ms) run(ms): the task ran for `run`
# until `time`, after waiting `sch-delay` from its wake-up.
# Core 1: CPU 1/TCG woke at 1.0000 s and waited 0.8 ms while kdamond.0
# (0.7 ms) and sleep (0.1 ms) ran; then a second wake-up that waited
# 50 µs. Core 0: CPU 0/TCG waited 0.2 ms; the main loop 2.5 ms behind a
# kworker that ran 2 ms before it and an idle gap of 0.5 ms.
TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
       1.000700 [0001]  kdamond.0[77]                       0.000      0.000      0.700
       1.000800 [0001]  sleep[500]                          0.000      0.000      0.100
       1.000900 [0001]  CPU 1/TCG[101/100]                  5.000      0.800      0.100
       1.002000 [0001]  CPU 1/TCG[101/100]                  1.000      0.050      0.050
       1.003000 [0000]  CPU 0/TCG[102/100]                  0.000      0.200      1.000
       1.005000 [0000]  kworker/u8:0-ev[35]                 0.000      0.000      2.000
       1.005600 [0000]  qemu-system-x86[100]                3.000      2.500      0.100
"""


def run(text, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([sys.executable, host_sched_py, f.name, *args], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr, f.name
    finally:
        os.unlink(f.name)


def check(what, cond, out=""):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}\n{out}")


def row(out, label):
    for line in out.splitlines():
        if line.startswith(f"| `{label}`"):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


rc, out, _ = run(TIMEHIST)
check("exit 0", rc == 0, out)
cpu1 = row(out, "CPU 1/TCG")
# thread, runs, <100, <300, <500, <1000, <2000, >=2000, worst
check("CPU 1/TCG found by name", cpu1 is not None, out)
if cpu1:
    check("CPU 1/TCG: 2 runs, one under 100 µs, one of 0.5-1 ms, worst 0.80 ms",
          cpu1[1:] == ["2", "1", "0", "0", "1", "0", "0", "0.80"], out)
cpu0 = row(out, "CPU 0/TCG")
check("CPU 0/TCG: one run that waited 100-300 µs", cpu0 and cpu0[1:8] == ["1", "0", "1", "0", "0", "0", "0"], out)
main = row(out, "QEMU's others (main loop, I/O)")
check("the main loop's 2.5 ms wait is >= 2000 µs", main and main[7] == "1", out)
blame1 = [l for l in out.splitlines() if l.startswith("- `CPU 1/TCG`")]
check("CPU 1/TCG's wait blamed on kdamond.0 0.7 ms and sleep 0.1 ms, nothing else",
      blame1 == ["- `CPU 1/TCG` (1 waits): kdamond.0 0.7, sleep 0.1"], out)
blame0 = [l for l in out.splitlines() if l.startswith("- `CPU 0/TCG`")]
check("CPU 0/TCG's 0.2 ms wait is under 500 µs: no blame", blame0 == ["- `CPU 0/TCG` (0 waits): -"], out)
blamem = [l for l in out.splitlines() if l.startswith("- `QEMU's others")]
check("the main loop's wait: the kworker's 2 ms overlap, nothing before its wake-up",
      blamem == ["- `QEMU's others (main loop, I/O)` (1 waits): kworker/u8:0-ev 2.0"], out)

rc, out, _ = run(TIMEHIST, "--over-us", "900")
check("--over-us 900: the 0.8 ms wait blames nobody",
      "- `CPU 1/TCG` (0 waits): -" in out and rc == 0, out)

rc, out, _ = run(TIMEHIST, "--thread", "nosuch.*")
check("an unmatched --thread is refused", rc != 0 and "no thread matched nosuch.*" in out, out)

rc, out, name = run("not timehist output\n")
check("input without rows is refused, naming the file", rc != 0 and name in out, out)

print(f"FAIL: {len(failures)} checks" if failures else "ok")
sys.exit(1 if failures else 0)
