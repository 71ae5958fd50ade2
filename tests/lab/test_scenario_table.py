#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_scenario_table.py SOURCE_DIR - every real-Xen lab test is a row of
one table, tests/lab/scenarios.cmake (fo_lab_test, cmake/FoLab.cmake),
checked on the host without booting anything:

- every row names existing scenario files (tests/lab/scenarios/NAME.sh for
  the lab's runner, tests/lab/systemd/scenarios/NAME.sh for the systemd
  and two-host runners), and no two rows share a test name;
- every scenario file there is a row's, or listed by fo_lab_not_a_test
  with a reason (a helper, a benchmark's own boot), not both;
- no other CMakeLists.txt or .cmake file registers a lab test: no
  add_test named xen_* but the patched Xen's build tests, none that runs
  a lab runner.

Then the same checks on altered copies of the table must fail, each with
its message: the check cannot pass by finding nothing."""
import os
import re
import sys

TABLE = "tests/lab/scenarios.cmake"
FUNCTION_FILE = "cmake/FoLab.cmake"
SCENARIO_DIRS = {"lab": "scenarios", "systemd": "systemd/scenarios",
                 "two-host": "systemd/scenarios"}
# xen_* tests that are not boots of the lab: they build the patched Xen
# (rt-patches/build-xen.sh), and the table's XEN patched rows depend on them.
BUILD_TESTS = {"xen_rt_series_build", "xen_rt_series_build_arm64"}
# What a lab test runs: the runners and the scripts that boot the lab.
RUNNERS = re.compile(r"\b(lab\.sh|sd-lab\.sh|two-host\.sh|bench\.sh|bench-kmod\.sh|"
                     r"bench-overhead\.sh|drill-rounds-host\.sh)\b")


def cmake_calls(text, function):
    """(line, [arguments]) of every call of function in CMake text: quoted
    arguments unquoted, comments dropped."""
    calls = []
    for m in re.finditer(r"^[ \t]*" + re.escape(function) + r"[ \t]*\(", text, re.M | re.I):
        i, args, depth = m.end(), [], 1
        while i < len(text) and depth:
            c = text[i]
            if c == "#":
                i = text.find("\n", i)
                i = len(text) if i < 0 else i
            elif c == '"':
                j, arg = i + 1, ""
                while j < len(text) and text[j] != '"':
                    if text[j] == "\\" and j + 1 < len(text):
                        j += 1
                    arg += text[j]
                    j += 1
                args.append(arg)
                i = j + 1
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                depth -= 1
                i += 1
            elif c.isspace():
                i += 1
            else:
                j = i
                while j < len(text) and not text[j].isspace() and text[j] not in '()#"':
                    j += 1
                args.append(text[i:j])
                i = j
        calls.append((text.count("\n", 0, m.start()) + 1, args))
    return calls


def keyword(args, key):
    """The value after key in a call's arguments, or None."""
    return args[args.index(key) + 1] if key in args[:-1] else None


def check(table, lab_files, cmake_files):
    """Failures of the table (its text), given the files under tests/lab
    (paths relative to it) and every other CMake file (path -> text)."""
    failures, registered, names = [], set(), set()
    for line, args in cmake_calls(table, "fo_lab_test"):
        name = keyword(args, "NAME")
        scenarios = keyword(args, "SCENARIOS")
        runner = keyword(args, "RUNNER") or "lab"
        where = f"{TABLE}:{line} {name}"
        if not name or not scenarios:
            failures.append(f"{where}: a row without NAME or SCENARIOS")
            continue
        if name in names:
            failures.append(f"{where}: test name given twice")
        names.add(name)
        if runner not in SCENARIO_DIRS:
            failures.append(f"{where}: RUNNER {runner}: not one of {', '.join(SCENARIO_DIRS)}")
            continue
        for s in scenarios.split("+"):
            path = f"{SCENARIO_DIRS[runner]}/{s}.sh"
            if path not in lab_files:
                failures.append(f"{where}: no scenario tests/lab/{path}")
            registered.add(path)
    listed = set()
    for line, args in cmake_calls(table, "fo_lab_not_a_test"):
        path = args[0] if args else ""
        if len(args) != 2 or not args[1].strip():
            failures.append(f"{TABLE}:{line}: fo_lab_not_a_test({path}) needs the reason, one argument")
        if path not in lab_files:
            failures.append(f"{TABLE}:{line}: fo_lab_not_a_test: no tests/lab/{path}")
        if path in registered:
            failures.append(f"{TABLE}:{line}: tests/lab/{path} is listed as not a test and a row boots it")
        listed.add(path)
    dirs = set(SCENARIO_DIRS.values())
    for path in sorted(lab_files):
        if os.path.dirname(path) in dirs and path.endswith(".sh") \
                and path not in registered and path not in listed:
            failures.append(f"tests/lab/{path}: in no row of {TABLE} and not listed there as "
                            "not a test (fo_lab_not_a_test PATH REASON)")
    for path, text in sorted(cmake_files.items()):
        for line, args in cmake_calls(text, "add_test"):
            name = keyword(args, "NAME") or "?"
            runs = RUNNERS.search(" ".join(args))
            if (name.startswith("xen_") and name not in BUILD_TESTS) or runs:
                failures.append(f"{path}:{line}: lab test {name} registered outside {TABLE}"
                                + (f" (runs {runs.group(1)})" if runs else ""))
    return failures, names


def read_tree(src):
    lab = os.path.join(src, "tests", "lab")
    lab_files = set()
    for d in set(SCENARIO_DIRS.values()):
        for f in os.listdir(os.path.join(lab, d)):
            lab_files.add(f"{d}/{f}")
    cmake_files = {}
    for top, dirs, files in os.walk(src):
        # Skip build trees (a CMakeCache.txt) and hidden directories.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.exists(os.path.join(top, d, "CMakeCache.txt")))
        for f in files:
            path = os.path.relpath(os.path.join(top, f), src)
            if (f == "CMakeLists.txt" or f.endswith(".cmake")) and path not in (TABLE, FUNCTION_FILE):
                cmake_files[path] = open(os.path.join(top, f), encoding="utf-8").read()
    return open(os.path.join(src, TABLE), encoding="utf-8").read(), lab_files, cmake_files


def must_fail(what, failures, expected):
    """A mutated input must give a failure matching expected."""
    if not any(re.search(expected, f) for f in failures):
        return [f"self-check: {what} went unnoticed (wanted /{expected}/, got {failures})"]
    return []


def main():
    src = os.path.abspath(sys.argv[1])
    table, lab_files, cmake_files = read_tree(src)
    failures, names = check(table, lab_files, cmake_files)

    # The checks must be able to fail: each alteration below, of the real
    # inputs, must be reported.
    row = re.search(r"^fo_lab_test\(NAME xen_bumpless .*\)\n", table, re.M)
    if not row:
        failures.append(f"self-check: no one-line row xen_bumpless in {TABLE} to alter")
    else:
        dropped = table.replace(row.group(0), "")
        failures += must_fail("a scenario in no row", check(dropped, lab_files, cmake_files)[0],
                              r"tests/lab/scenarios/bumpless\.sh: in no row")
        misspelt = table.replace(row.group(0),
                                 row.group(0).replace("SCENARIOS bumpless", "SCENARIOS bumpless+bumples"))
        failures += must_fail("a row naming a missing scenario",
                              check(misspelt, lab_files, cmake_files)[0],
                              r"xen_bumpless: no scenario tests/lab/scenarios/bumples\.sh")
        twice = table + row.group(0)
        failures += must_fail("a test name given twice", check(twice, lab_files, cmake_files)[0],
                              r"xen_bumpless: test name given twice")
    unlisted = re.sub(r'fo_lab_not_a_test\(scenarios/rt-bench\.sh\s+"[^"]*"\)', "", table)
    failures += must_fail("a scenario neither a row's nor listed",
                          check(unlisted, lab_files, cmake_files)[0],
                          r"tests/lab/scenarios/rt-bench\.sh: in no row")
    no_reason = re.sub(r'(fo_lab_not_a_test\(scenarios/rt-bench\.sh)\s+"[^"]*"\)', r'\1 "")',
                       table)
    failures += must_fail("fo_lab_not_a_test without a reason",
                          check(no_reason, lab_files, cmake_files)[0], r"needs the reason")
    stray = dict(cmake_files)
    stray["rt-patches/CMakeLists.txt"] = stray.get("rt-patches/CMakeLists.txt", "") + \
        "add_test(NAME xen_extra_xenrt\n  COMMAND ${FO_RT_LAB} run smoke --patched-xen)\n"
    failures += must_fail("a lab test registered outside the table",
                          check(table, lab_files, stray)[0],
                          r"rt-patches/CMakeLists\.txt:\d+: lab test xen_extra_xenrt registered outside")

    for f in failures:
        print(f"FAIL {f}")
    n_files = sum(1 for p in lab_files if p.endswith(".sh"))
    print(f"{len(names)} lab tests in {TABLE}; {n_files} scenario files; "
          f"{len(cmake_files)} other CMake files; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
