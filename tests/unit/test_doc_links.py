#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_doc_links.py SOURCE_DIR

Every relative link in the project's Markdown files points at a file or
folder that exists: `[text](path)`, `[text](path#anchor)` and reference
definitions `[label]: path`, resolved against the linking file's folder.
Links with a scheme (https:, mailto:) and in-page anchors (#...) are not
checked; neither is text inside code spans or fenced code blocks. Build
trees (a folder holding CMakeCache.txt) and hidden folders are skipped."""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
INLINE = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2[^\n]*$", re.M | re.S)
CODESPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def markdown_files():
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt")))
        for f in sorted(filenames):
            if f.endswith(".md"):
                yield os.path.join(dirpath, f)


def targets(text):
    text = FENCE.sub("", text)
    text = CODESPAN.sub("", text)
    for m in INLINE.finditer(text):
        yield m.group(1)
    for m in REFDEF.finditer(text):
        yield m.group(1)


broken = []
files = links = 0
for path in markdown_files():
    files += 1
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for t in targets(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) or t.startswith("#"):
            continue
        links += 1
        rel = t.split("#", 1)[0]
        dest = os.path.normpath(os.path.join(root if rel.startswith("/") else os.path.dirname(path), rel.lstrip("/")))
        if not os.path.exists(dest):
            broken.append(f"{os.path.relpath(path, root)}: link to {t}: {os.path.relpath(dest, root)} does not exist")

for b in broken:
    print("FAIL:", b, file=sys.stderr)
if files < 5 or links < 20:
    print(f"FAIL: found only {files} Markdown files and {links} relative links under {root}", file=sys.stderr)
    broken.append("too few")
print(f"test_doc_links: {files} Markdown files, {links} relative links, {len(broken)} broken")
sys.exit(1 if broken else 0)
