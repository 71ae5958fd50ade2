#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_doc_refs.py - the newcomer's map stays true to the code.

ARCHITECTURE.md walks a heartbeat deadline to the standby running as
`file: function` hops, and says where to change a fault kind, a config
key, a metric or a lab scenario by naming files and functions. A rename
that forgets the map sends the next reader into a dead end, so every such
reference is checked here:

  - `path: name` (path relative to the top of the tree, to failoverd/, or
    a bare file name unique in the tree): the file exists and defines or
    mentions `name` as a whole word;
  - `path/with/slash.ext` or `name.ext` alone: the file exists;
  - a bare identifier in backticks that looks like code (snake_case with
    an underscore, or UPPER_CASE): it occurs somewhere in the sources.

  check_doc_refs.py TOP [DOC...]     (default DOC: ARCHITECTURE.md README.md CONTRIBUTING.md,
                                    the three a newcomer reads first)
Exit 1 with one line per dead reference.
"""
import os
import re
import sys

SOURCE_EXT = (".c", ".h", ".def", ".sh", ".py", ".cmake", ".txt", ".json", ".scd", ".patch",
              ".te", ".service", ".in", ".yml")
# Words a doc uses for "fill in yours" in a path (scenarios/NAME.sh).
PLACEHOLDERS = {"NAME", "DATE", "ARCH", "KIND", "SCENARIO", "TEST"}
SKIP_DIRS = {".git", "build", "bench", "archive"}


def tree_files(top):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for f in files:
            yield os.path.relpath(os.path.join(root, f), top)


def resolve(top, files, path):
    """The file a doc's path means: from the top, from failoverd/, or a
    unique path suffix (`kernel_owner.c`, `pair/verdicts.c`)."""
    for base in ("", "failoverd/"):
        if os.path.isfile(os.path.join(top, base + path)):
            return base + path
    hits = [f for f in files if f == path or f.endswith("/" + path)]
    if len(hits) == 1:
        return hits[0]
    # Several files share the name (pair.c): the doc's own context would
    # pick one; accept it when any of them is meant, checked by name below.
    return hits or None


def check(top, docs):
    files = list(tree_files(top))
    sources = {}
    for f in files:
        if f.endswith(SOURCE_EXT):
            try:
                sources[f] = open(os.path.join(top, f), errors="replace").read()
            except OSError:
                pass
    corpus = "\n".join(sources.values())
    dead = []
    checked = 0
    for doc in docs:
        text = open(os.path.join(top, doc), errors="replace").read()
        # Fenced code blocks are pictures and commands, not references.
        text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for lineno, line in enumerate(text.splitlines(), 1):
            for ref in re.findall(r"`([^`\n]+)`", line):
                ref = ref.strip()
                m = re.fullmatch(r"([\w./-]+\.(?:c|h|def|sh|py)): (\w+)", ref)
                if m:
                    path, name = m.groups()
                    where = resolve(top, files, path)
                    checked += 1
                    if not where:
                        dead.append(f"{doc}:{lineno}: `{ref}`: no file {path}")
                        continue
                    cands = where if isinstance(where, list) else [where]
                    if not any(re.search(rf"\b{re.escape(name)}\b", sources.get(c, "")) for c in cands):
                        dead.append(f"{doc}:{lineno}: `{ref}`: {name} is not in {', '.join(cands)}")
                    continue
                if re.fullmatch(r"[\w.-]+(/[\w.-]+)*\.(c|h|def|sh|py|md|json|scd|yml|in)", ref):
                    if set(re.findall(r"[A-Za-z]+", ref)) & PLACEHOLDERS:
                        continue  # a placeholder: scenarios/NAME.sh
                    checked += 1
                    if not resolve(top, files, ref):
                        dead.append(f"{doc}:{lineno}: `{ref}`: no such file")
                    continue
                if re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+|[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", ref):
                    checked += 1
                    if not re.search(rf"\b{re.escape(ref)}\b", corpus):
                        dead.append(f"{doc}:{lineno}: `{ref}`: not found in the sources")
    return checked, dead


def self_test():
    """The check finds each kind of dead reference, and only those."""
    import tempfile
    with tempfile.TemporaryDirectory() as top:
        os.makedirs(os.path.join(top, "failoverd/core"))
        with open(os.path.join(top, "failoverd/core/pair.c"), "w") as f:
            f.write("void fo_pair_on_deadline(void) {}\n#define FO_FAULT_COUNT 3\n")
        with open(os.path.join(top, "DOC.md"), "w") as f:
            f.write("`core/pair.c: fo_pair_on_deadline` `pair.c: fo_pair_on_deadline` `FO_FAULT_COUNT`\n"
                    "```\n`core/gone.c: x`\n```\n"
                    "`core/pair.c: fo_pair_renamed`\n`core/gone.c: fo_x`\n`docs/gone.md`\n"
                    "`fo_vanished_helper` `scenarios/NAME.sh`\n")
        checked, dead = check(top, ["DOC.md"])
    want = ["DOC.md:5: `core/pair.c: fo_pair_renamed`: fo_pair_renamed is not in failoverd/core/pair.c",
            "DOC.md:6: `core/gone.c: fo_x`: no file core/gone.c",
            "DOC.md:7: `docs/gone.md`: no such file",
            "DOC.md:8: `fo_vanished_helper`: not found in the sources"]
    if dead != want or checked != 7:
        print("check_doc_refs self-test FAILED: checked", checked, "dead:", *dead, sep="\n  ")
        return 1
    print("check_doc_refs self-test: 4 dead references of 7 found, as planted")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    top = sys.argv[1]
    docs = sys.argv[2:] or ["ARCHITECTURE.md", "README.md", "CONTRIBUTING.md"]
    checked, dead = check(top, docs)
    for d in dead:
        print(d)
    print(f"check_doc_refs: {checked} references in {', '.join(docs)}, {len(dead)} dead")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
