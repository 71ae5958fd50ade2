#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_shell_layout.py LAB_SRC - the lab's shell code stays split the way
it is meant to be, checked on the host without booting anything:

- scenarios/common.sh sources every scenarios/lib/*.sh, each once, and
  nothing that is not there (a helper file left out, or a name misspelt,
  would only show in dom0, as every scenario failing at its first line);
- lab.sh sources every lib/*.sh that exists, each once;
- every shell file under LAB_SRC parses: `bash -n`, and for the files dom0
  and the domUs run (scenarios, their helpers, dom0/, domu/) `busybox sh
  -n` too, their shell there;
- no shell file under LAB_SRC is over 800 lines (the project's rule)."""
import os
import re
import shutil
import subprocess
import sys

lab_src = os.path.abspath(sys.argv[1])
MAX_LINES = 800
failures = []


def rel(path):
    return os.path.relpath(path, lab_src)


def sourced(script, pattern):
    """The names a script sources, in order: pattern's group 1 per line."""
    return [m.group(1) for m in re.finditer(pattern, open(script).read(), re.M)]


def check_sources(script, lib_dir, pattern):
    names = sourced(script, pattern)
    have = sorted(f[:-3] for f in os.listdir(lib_dir) if f.endswith(".sh"))
    for n in sorted(set(have) - set(names)):
        failures.append(f"{rel(script)} does not source {rel(lib_dir)}/{n}.sh")
    for n in sorted(set(names) - set(have)):
        failures.append(f"{rel(script)} sources {rel(lib_dir)}/{n}.sh, which does not exist")
    for n in sorted({n for n in names if names.count(n) > 1}):
        failures.append(f"{rel(script)} sources {rel(lib_dir)}/{n}.sh more than once")
    return names


helpers = check_sources(os.path.join(lab_src, "scenarios", "common.sh"),
                        os.path.join(lab_src, "scenarios", "lib"),
                        r'^\. "?\$LAB_LIB/([a-z0-9_-]+)\.sh"?')
runner = check_sources(os.path.join(lab_src, "lab.sh"), os.path.join(lab_src, "lib"),
                       r'^\. "\$LAB_SRC/lib/([a-z0-9_-]+)\.sh"')


def shell_files():
    for top, dirs, files in os.walk(lab_src):
        dirs[:] = sorted(d for d in dirs if d not in ("results", "__pycache__"))
        for name in sorted(files):
            path = os.path.join(top, name)
            if name.endswith(".sh"):
                yield path
            elif "." not in name:
                with open(path, "rb") as f:
                    if f.read(2) == b"#!" and b"sh" in f.readline():
                        yield path


busybox = shutil.which("busybox")
n_files = 0
longest = (0, "")
for path in shell_files():
    n_files += 1
    lines = sum(1 for _ in open(path, encoding="utf-8"))
    longest = max(longest, (lines, rel(path)))
    if lines > MAX_LINES:
        failures.append(f"{rel(path)}: {lines} lines, over {MAX_LINES} (split it by concern)")
    r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    if r.returncode:
        failures.append(f"{rel(path)}: bash -n: {r.stderr.strip()}")
    in_guest = rel(path).split(os.sep)[0] in ("scenarios", "dom0", "domu")
    if in_guest and busybox:
        r = subprocess.run([busybox, "sh", "-n", path], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"{rel(path)}: busybox sh -n: {r.stderr.strip()}")

for f in failures:
    print("FAIL", f)
print(f"test_shell_layout: common.sh sources {len(helpers)} helper files, lab.sh {len(runner)};"
      f" {n_files} shell files parsed; the longest, {longest[1]}, {longest[0]} lines"
      + ("" if busybox else " (no busybox: guest files parsed by bash only)"))
sys.exit(1 if failures else 0)
