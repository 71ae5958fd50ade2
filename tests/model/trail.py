#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""trail.py - a SPIN counterexample, readable: one line per model source line
a process reaches, with the step number and the process. Run it where pan
wrote ownership.pml.trail, with the -D flags the verifier was built with:

    tests/model/trail.py -DWATCH -DFLAGS=1 [--model path/to/ownership.pml]
"""
import re
import subprocess
import sys

args = sys.argv[1:]
model = 'ownership.pml'
if '--model' in args:
    i = args.index('--model')
    model = args[i + 1]
    del args[i:i + 2]
src = open(model).read().split('\n')
# spin looks for <model>.trail beside the model.
out = subprocess.run(['spin', '-t', '-p', '-g'] + args + [model],
                     capture_output=True, text=True).stdout
step = re.compile(r'^\s*(\d+):\s+proc\s+\d+ \((\w+):\d+\) \S+:(\d+) \(state \d+\)')
last = {}
for line in out.split('\n'):
    m = step.match(line)
    if not m:
        if 'assertion violated' in line or 'START OF CYCLE' in line:
            print('>>>', line.strip())
        continue
    n, name, ln = m.group(1), m.group(2), int(m.group(3))
    if last.get(name) == ln:
        continue
    last[name] = ln
    text = src[ln - 1].strip() if 0 < ln <= len(src) else ''
    print(f'{n:>4} {name:10} {ln:4} {text[:110]}')
