#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_knobs.py LAB_SRC - `lab.sh --help` lists every FO_LAB_* knob the lab
reads, and nothing it does not read.

The list is lib/knobs.sh's table (LAB_KNOBS), which --help prints. A read is
$FO_LAB_X or ${FO_LAB_X...} in a shell file under LAB_SRC (lab.sh and its
lib/, debroot.sh, mkimage.sh, the arm64 and systemd labs, dom0's scripts),
or os.environ / getenv of one in a Python file. Not searched: Markdown, the
committed results, CMake (its FO_LAB_* are CMake variables) and C (a header
guard). A knob read but not in the table, or in the table but read
nowhere, fails the test with its name and where it is read."""
import os
import re
import subprocess
import sys

lab_src = os.path.abspath(sys.argv[1])
SHELL_READ = re.compile(r"\$\{?(FO_LAB_[A-Z0-9_]+)")
PY_READ = re.compile(r"""(?:environ(?:\.get)?\s*[\[(]|getenv\s*\()\s*["'](FO_LAB_[A-Z0-9_]+)""")
SKIP_DIRS = {"results", "__pycache__"}
SKIP_EXT = (".md", ".txt", ".c", ".h", ".json", ".csv", ".cmake")


def reads():
    """{knob: [file:line, ...]} for every read under lab_src."""
    found = {}
    for top, dirs, files in os.walk(lab_src):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(SKIP_EXT) or name == "CMakeLists.txt" or name == os.path.basename(__file__):
                continue
            path = os.path.join(top, name)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue  # a binary
            pattern = PY_READ if name.endswith(".py") else SHELL_READ
            for n, line in enumerate(text.splitlines(), 1):
                for m in pattern.finditer(line):
                    found.setdefault(m.group(1), []).append(f"{os.path.relpath(path, lab_src)}:{n}")
    return found


def listed():
    """The knobs `lab.sh --help` prints (its Environment section)."""
    out = subprocess.run(["bash", os.path.join(lab_src, "lab.sh"), "--help"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"test_knobs: lab.sh --help exited {out.returncode}: {out.stderr.strip()}")
    text = out.stdout
    at = text.find("Environment (FO_LAB_*")
    if at < 0:
        sys.exit("test_knobs: lab.sh --help has no 'Environment (FO_LAB_*' section:\n" + text)
    names = []
    for line in text[at:].splitlines()[1:]:
        m = re.match(r"\s+(FO_LAB_[A-Z0-9_]+)\s+(\S+)\s+\S", line)
        if m:
            names.append(m.group(1))
        elif line.strip():
            break
    return names


read = reads()
help_names = listed()
failures = []
for knob in sorted(set(read) - set(help_names)):
    failures.append(f"{knob} is read ({', '.join(read[knob][:3])}) but lab.sh --help does not list it: "
                    "add it to LAB_KNOBS in tests/lab/lib/knobs.sh")
for knob in sorted(set(help_names) - set(read)):
    failures.append(f"{knob} is listed by lab.sh --help but nothing under tests/lab reads it: "
                    "drop it from LAB_KNOBS")
for knob in sorted({k for k in help_names if help_names.count(k) > 1}):
    failures.append(f"{knob} is listed more than once")
if not read:
    failures.append("no FO_LAB_* read found at all: is LAB_SRC tests/lab?")
for f in failures:
    print("FAIL", f)
print(f"test_knobs: {len(read)} knobs read, {len(help_names)} listed by lab.sh --help")
sys.exit(1 if failures else 0)
