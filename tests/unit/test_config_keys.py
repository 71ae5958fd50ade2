#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_config_keys.py SRCDIR

The configuration's keys have one list, failoverd/core/config/keys.def,
the keys the reader accepts (it refuses any other). Held against it:

  - the JSON Schema (configs/failoverd.schema.json): exactly the same key
    paths, and every object in it closed (additionalProperties false), as
    the reader is;
  - failoverd.json(5): every key of the table is described there (written
    *PATH*; a member of an object described as one value, "*PATH* (object",
    may be named in that paragraph only);
  - every man page: a key path written in bold (*daemon.cpu*,
    *pairs[].network*) is one of the table.

So a key added to one of them and not the others fails here."""
import glob
import json
import os
import re
import sys

srcdir = sys.argv[1]
errors = []


def read(rel):
    with open(os.path.join(srcdir, rel)) as f:
        return f.read()


# The table: FO_CONFIG_OBJECT(ID, "PATH", "KEY", ...), comments taken out.
table_text = re.sub(r"/\*.*?\*/", "", read("failoverd/core/config/keys.def"), flags=re.S)
rows = re.findall(r"^FO_CONFIG_OBJECT\(\s*(\w+),\s*\"([^\"]*)\"((?:\s*,\s*\"[a-z_0-9]+\")+)\s*\)", table_text, re.M)
if len(rows) != table_text.count("FO_CONFIG_OBJECT(") or not rows:
    errors.append(f"keys.def: read {len(rows)} rows of {table_text.count('FO_CONFIG_OBJECT(')}")
objects = {}  # object path -> its keys
for _, path, keys in rows:
    if path in objects:
        errors.append(f"keys.def: object '{path}' has two rows")
    objects[path] = re.findall(r"\"([a-z_0-9]+)\"", keys)


def join(parent, key):
    return f"{parent}.{key}" if parent else key


table = {join(o, k) for o, keys in objects.items() for k in keys}
for o in objects:
    if o and o.removesuffix("[]") not in table:
        errors.append(f"keys.def: object '{o}' is no key of the table's (its parent lacks it)")

# The schema: every property's path, "[]" for an array's items.
schema = json.loads(read("configs/failoverd.schema.json"))
defs = schema.get("$defs", {})


def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def walk(node, path, out):
    node = resolve(node)
    if not isinstance(node, dict):
        return
    if "properties" in node:
        if node.get("additionalProperties") is not False:
            errors.append(f"schema: object '{path}' is not closed (additionalProperties: false); "
                          "failoverd refuses unknown keys")
        for name, sub in node["properties"].items():
            out.add(join(path, name))
            walk(sub, join(path, name), out)
    if "items" in node:
        walk(node["items"], path + "[]", out)


in_schema = set()
walk(schema, "", in_schema)
for k in sorted(table - in_schema):
    errors.append(f"config key {k}: in keys.def (the reader accepts it), not in configs/failoverd.schema.json")
for k in sorted(in_schema - table):
    errors.append(f"config key {k}: in configs/failoverd.schema.json, not in keys.def (the reader refuses it)")

# failoverd.json(5) describes every key.
conf = read("man/failoverd.json.5.scd")
bold = set(re.findall(r"\*([a-z_0-9\[\].]+)\*", conf))


def one_value_paragraph(parent):
    """The paragraph of PARENT's entry when it is described as one value."""
    m = re.search(r"^\*" + re.escape(parent) + r"\* \(object.*?(?=\n\n|\Z)", conf, re.S | re.M)
    return m.group(0) if m else None


for k in sorted(table):
    if k in objects and k not in bold:
        continue  # an object that only groups keys: described through them
    if k in bold or k + "[]" in bold:
        continue
    parent, _, name = k.rpartition(".")
    para = one_value_paragraph(parent) if parent else None
    if para and re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", para):
        continue
    errors.append(f"man/failoverd.json.5.scd: config key {k} (in keys.def) is not described")

# Every man page: a bold key path is one of the table (or an object's
# "[]"), so a page cannot describe a key failoverd would refuse.
roots = objects.get("", [])
path_re = re.compile(r"\*((?:" + "|".join(map(re.escape, roots)) + r")(?:\[\])?(?:\.[a-z_0-9]+(?:\[\])?)*)\*")
named = 0
for page in sorted(glob.glob(os.path.join(srcdir, "man", "*.scd"))):
    with open(page) as f:
        for n, line in enumerate(f, 1):
            for k in path_re.findall(line):
                named += 1
                if k not in table and k not in objects:
                    errors.append(f"man/{os.path.basename(page)}:{n}: *{k}* is no config key (not in keys.def)")

for e in errors:
    print("FAIL:", e, file=sys.stderr)
print(f"test_config_keys: {len(table)} keys in {len(objects)} objects, {len(in_schema)} in the schema, "
      f"{named} key paths named in the man pages; {'FAIL' if errors else 'ok'}")
sys.exit(1 if errors else 0)
