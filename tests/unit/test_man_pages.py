#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_man_pages.py MANDIR README FAILOVERD FAILOVERCTL [FO_HEARTBEAT]

The man pages say what the programs do: every option (long and short),
every failoverctl command and every environment variable that a program's
--help prints appears in that program's built man page, and every key of
README.md's configuration table appears in failoverd.json(5). Checked on the
built roff (MANDIR: build/man), the text that is installed."""
import os
import re
import subprocess
import sys

mandir, readme, failoverd, failoverctl = sys.argv[1:5]
fo_heartbeat = sys.argv[5] if len(sys.argv) > 5 else None
errors = []


def man_text(name):
    """The roff, with font changes and escapes taken out."""
    with open(os.path.join(mandir, name)) as f:
        t = f.read()
    t = re.sub(r"\\f[BIRP]", "", t)
    t = re.sub(r"\\f\(..", "", t)
    t = t.replace("\\-", "-").replace("\\&", "").replace("\\(em", "-").replace("\\e", "\\")
    # scdoc breaks lines only between words: join them for phrase lookups.
    return re.sub(r"\s+", " ", t)


def help_text(binary):
    r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        errors.append(f"{binary} --help exited {r.returncode}")
    return r.stdout


def check_program(binary, page):
    text = help_text(binary)
    man = man_text(page)
    longs = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    shorts = set(re.findall(r"(?<![\w-])(-[a-zA-Z])(?=[ ,])", text))
    envs = set(re.findall(r"\$([A-Z][A-Z0-9_]+)", text))
    for opt in sorted(longs | shorts):
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", man):
            errors.append(f"{page}: option {opt} (in {os.path.basename(binary)} --help) is not in the man page")
    for env in sorted(envs):
        if env not in man:
            errors.append(f"{page}: environment variable {env} (in --help) is not in the man page")
    print(f"{page}: {len(longs)} long, {len(shorts)} short options, {len(envs)} variables checked")
    return text, man


_, _ = check_program(failoverd, "failoverd.8")
ctl_help, ctl_man = check_program(failoverctl, "failoverctl.8")
# failoverctl's commands: the two-space-indented first words of its Commands: section.
m = re.search(r"^Commands:\n(.*?)\n\n", ctl_help, re.S | re.M)
commands = re.findall(r"^  ([a-z][a-z-]*)\b", m.group(1), re.M) if m else []
if len(commands) < 5:
    errors.append(f"failoverctl --help: found only {commands} as commands")
for c in commands:
    # Listed under COMMANDS as a bold term at the start of a paragraph.
    if not re.search(r"\.(?:P|RE) " + re.escape(c) + r"(?![\w-]).{0,200}?\.RS 4", ctl_man):
        errors.append(f"failoverctl.8: command {c} is not described under COMMANDS")
print(f"failoverctl.8: {len(commands)} commands checked")
if fo_heartbeat:
    check_program(fo_heartbeat, "fo-heartbeat.8")

# README.md's configuration table: `key` cells of the first column; `.x`
# is short for the previous key's parent + x (`pairs[].active`, `.standby`).
conf_man = man_text("failoverd.json.5")
with open(readme) as f:
    rd = f.read()
sect = re.search(r"^## Configuration\n(.*?)^## ", rd, re.S | re.M)
keys = []
for line in (sect.group(1) if sect else "").splitlines():
    if not line.startswith("| `"):
        continue
    first = line.split("|")[1]
    prev = None
    for k in re.findall(r"`([^`]+)`", first):
        if k.startswith(".") and prev:
            k = prev.rsplit(".", 1)[0] + k
        keys.append(k)
        prev = k
if len(keys) < 15:
    errors.append(f"README.md configuration table: found only {len(keys)} keys")
for k in keys:
    if k not in conf_man:
        errors.append(f"failoverd.json.5: config key {k} (README.md table) is not in the man page")
print(f"failoverd.json.5: {len(keys)} README keys checked")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"test_man_pages: {'FAIL' if errors else 'ok'} ({len(errors)} problem(s))")
sys.exit(1 if errors else 0)
