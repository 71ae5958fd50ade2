#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_man_pages.py MANDIR FAILOVERD FAILOVERCTL [FO_HEARTBEAT]

The man pages say what the programs do: every option (long and short),
every failoverctl command, drill fault kind and every environment variable
that a program's --help prints appears in that program's built man page.
Checked on the built roff (MANDIR: build/man), the text that is installed.
The configuration's keys in failoverd.json(5) are test_config_keys.py's."""
import os
import re
import subprocess
import sys

mandir, failoverd, failoverctl = sys.argv[1:4]
fo_heartbeat = sys.argv[4] if len(sys.argv) > 4 else None
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
# drill's fault kinds: --help prints them from the protocol's table, one
# a line under "Drill faults".
m = re.search(r"^Drill faults[^\n]*:\n(.*?)\n\n", ctl_help, re.S | re.M)
kinds = re.findall(r"^  ([a-z][a-z-]*) ", m.group(1), re.M) if m else []
if len(kinds) < 3:
    errors.append(f"failoverctl --help: found only {kinds} as drill fault kinds")
for k in kinds:
    if not re.search(r"(?<![\w-])" + re.escape(k) + r"(?![\w-])", ctl_man):
        errors.append(f"failoverctl.8: drill fault {k} (in --help) is not in the man page")
print(f"failoverctl.8: {len(kinds)} drill faults checked")
if fo_heartbeat:
    check_program(fo_heartbeat, "fo-heartbeat.8")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"test_man_pages: {'FAIL' if errors else 'ok'} ({len(errors)} problem(s))")
sys.exit(1 if errors else 0)
