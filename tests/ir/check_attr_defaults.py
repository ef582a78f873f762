#!/usr/bin/python3
"""Fails when an op attribute's default is written outside the op table.

Attribute defaults live in tessera/ir/op_attrs.def only; code reads them through the typed structs
of tessera/ir/op_attrs.h. This scans tessera/ for a quoted attribute name of the table followed by
a literal (`"alpha", 0.2f`, `"mode", "constant"`, `"min", -INFINITY`): the shape of a by-name read
with its default. Files still on the by-name readers are listed in PENDING with a count; the check
fails when one has more hits than listed (a new literal) and asks to lower the count when it has
fewer, so the list can only shrink.

Usage: check_attr_defaults.py SOURCE_DIR [--report]
"""
import os
import re
import sys

TABLE = "tessera/ir/op_attrs.def"

# Not yet converted to the typed structs: file -> hits allowed.
PENDING = {
    "tessera/compiler/evaluate.cpp": 5,
    "tessera/compiler/passes/batchnorm_folding.cpp": 5,
    "tessera/compiler/passes/pattern_fusion.cpp": 3,
}

LITERAL = r'(?:-?[0-9][0-9.eE+-]*f?|-?INFINITY|-?FLT_MAX|-?kInf|"[^"\n]*"|true|false)'


def attribute_names(root):
    names = set()
    for line in open(os.path.join(root, TABLE)):
        m = re.match(r"TESSERA_ATTR\(\w+, (\w+),", line)
        if m:
            names.add(m.group(1))
    return names


def main():
    root = sys.argv[1]
    report = "--report" in sys.argv
    names = attribute_names(root)
    pattern = re.compile(r'"(' + "|".join(sorted(names)) + r')"\s*,\s*' + LITERAL + r"\s*[,)]")
    hits = {}
    for d, _, files in os.walk(os.path.join(root, "tessera")):
        for f in files:
            if not f.endswith((".cpp", ".h", ".cc")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                if pattern.search(line):
                    hits.setdefault(rel, []).append((n, line.strip()))
    failures = 0
    for rel in sorted(set(hits) | set(PENDING)):
        found = hits.get(rel, [])
        allowed = PENDING.get(rel, 0)
        if report:
            print(f"{rel}: {len(found)}")
        if len(found) > allowed:
            failures += 1
            print(f"{rel}: {len(found)} attribute default literal(s) outside {TABLE} "
                  f"(allowed {allowed}); read the typed struct from tessera/ir/op_attrs.h instead:")
            for n, line in found:
                print(f"  {rel}:{n}: {line}")
        elif len(found) < allowed:
            failures += 1
            print(f"{rel}: {len(found)} literal(s), PENDING allows {allowed}: lower the count in "
                  f"{os.path.relpath(__file__, root)}")
    if failures:
        return 1
    print(f"no attribute default literal outside {TABLE} beyond the pending list "
          f"({sum(PENDING.values())} in {len(PENDING)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
