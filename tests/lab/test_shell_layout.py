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
- no shell file under LAB_SRC is over 800 lines (the project's rule), and
  no shell function over 60 lines unless LONG_FUNCTIONS says why;
- the files a runner sources with it (lab.sh, systemd/sd-lab.sh,
  systemd/two-host.sh: "$LAB_SRC/...", "$SD_SRC/...", "$HERE/...") define
  each function once: a second definition would silently replace the
  first (arm64/image.sh states arm64's differences as data and
  img_arm64_* hooks, never as its own copy of one of mkimage.sh's steps)."""
import os
import re
import shutil
import subprocess
import sys

lab_src = os.path.abspath(sys.argv[1])
MAX_LINES = 800
MAX_FUNCTION_LINES = 60
# (file, function): why it may stay longer than MAX_FUNCTION_LINES.
LONG_FUNCTIONS = {
    ("scenarios/bench-paths.sh", "bench_one"):
        "a third of it is one awk program (a round's samples and phases);"
        " it runs in dom0 only, so a split needs bench-paths boots to show"
        " the same samples",
}
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


FUNCTION_START = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{\s*$")


def functions(path):
    """(name, first line, lines) of each function written `name() {` ...
    `}` (the closing brace at the opening line's indentation)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = FUNCTION_START.match(line)
        if not m:
            continue
        close = m.group(1) + "}"
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(close):
                yield m.group(2), i + 1, j - i + 1
                break


def check_function_lengths(path):
    for name, first, n in functions(path):
        key = (rel(path), name)
        if n > MAX_FUNCTION_LINES and key not in LONG_FUNCTIONS:
            failures.append(f"{rel(path)}:{first}: {name} is {n} lines, over {MAX_FUNCTION_LINES}"
                            " (split it into named steps, or say why not in LONG_FUNCTIONS)")
        elif key in LONG_FUNCTIONS:
            long_seen.add(key)
            if n <= MAX_FUNCTION_LINES:
                failures.append(f"{rel(path)}: {name} is {n} lines now: drop it from LONG_FUNCTIONS")


SOURCE_ROOTS = {"LAB_SRC": "", "SD_SRC": "systemd"}


def sourced_files(script):
    """The files script sources by "$LAB_SRC/...", "$SD_SRC/..." or
    "$HERE/..." (its own directory), each resolved under LAB_SRC."""
    out = []
    for m in re.finditer(r'^\s*\.\s+"?\$(\w+)/([\w./-]+)"?', open(script).read(), re.M):
        var, tail = m.groups()
        if var == "HERE":
            base = os.path.dirname(script)
        elif var in SOURCE_ROOTS:
            base = os.path.join(lab_src, SOURCE_ROOTS[var])
        else:
            failures.append(f"{rel(script)} sources ${var}/{tail}: unknown to this test (SOURCE_ROOTS)")
            continue
        out.append(os.path.normpath(os.path.join(base, tail)))
    return out


def check_defined_once(runner):
    """Every function of runner and what it sources is defined once."""
    files, todo = [], [os.path.join(lab_src, runner)]
    while todo:
        f = todo.pop(0)
        if f in files:
            continue
        if not os.path.isfile(f):
            failures.append(f"{runner} sources {rel(f)}, which does not exist")
            continue
        files.append(f)
        todo += sourced_files(f)
    where = {}
    for f in files:
        for name, first, _ in functions(f):
            if name in where:
                failures.append(f"{runner}'s files define {name} twice: {where[name]} and"
                                f" {rel(f)}:{first} (the second replaces the first)")
            else:
                where[name] = f"{rel(f)}:{first}"
    return len(files), len(where)


busybox = shutil.which("busybox")
long_seen = set()
n_files = 0
longest = (0, "")
for path in shell_files():
    n_files += 1
    lines = sum(1 for _ in open(path, encoding="utf-8"))
    longest = max(longest, (lines, rel(path)))
    if lines > MAX_LINES:
        failures.append(f"{rel(path)}: {lines} lines, over {MAX_LINES} (split it by concern)")
    check_function_lengths(path)
    r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    if r.returncode:
        failures.append(f"{rel(path)}: bash -n: {r.stderr.strip()}")
    in_guest = rel(path).split(os.sep)[0] in ("scenarios", "dom0", "domu")
    if in_guest and busybox:
        r = subprocess.run([busybox, "sh", "-n", path], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"{rel(path)}: busybox sh -n: {r.stderr.strip()}")

for key in sorted(set(LONG_FUNCTIONS) - long_seen):
    failures.append(f"LONG_FUNCTIONS names {key[0]}: {key[1]}, which no longer exists")
once = {r: check_defined_once(r) for r in ("lab.sh", "systemd/sd-lab.sh", "systemd/two-host.sh")}

for f in failures:
    print("FAIL", f)
print(f"test_shell_layout: common.sh sources {len(helpers)} helper files, lab.sh {len(runner)};"
      f" {n_files} shell files parsed; the longest, {longest[1]}, {longest[0]} lines;"
      f" {len(LONG_FUNCTIONS)} function(s) over {MAX_FUNCTION_LINES} lines, with reasons;"
      + ",".join(f" {r} and what it sources {d} functions in {n} files" for r, (n, d) in once.items())
      + ("" if busybox else " (no busybox: guest files parsed by bash only)"))
sys.exit(1 if failures else 0)
