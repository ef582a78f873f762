"""Checks that code snippets in the docs are the code that the build compiles.

A fenced block preceded by `<!-- snippet: PATH REGION -->` must equal (ignoring indentation) the
lines of PATH between the two lines that contain `[REGION]`. PATH is a file that the build
compiles (examples/, tests/docs/), so the snippet is compiled code. Every block in a compiled
language (```cpp, ```c, ```cmake) must have such a marker.

usage: check_snippets.py SOURCE_DIR DOC.md[:MIN_SNIPPETS]...
"""
import re
import sys
import textwrap
from pathlib import Path

MARKER = re.compile(r"^<!-- snippet: (\S+) (\S+) -->$")
COMPILED = {"c", "cpp", "c++", "cmake"}


def region(path: Path, name: str) -> str:
    lines = path.read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if f"[{name}]" in line]
    if len(marks) != 2:
        raise SystemExit(f"{path}: expected two lines marking [{name}], found {len(marks)}")
    return textwrap.dedent("\n".join(lines[marks[0] + 1 : marks[1]])).strip("\n")


def main() -> int:
    source = Path(sys.argv[1])
    failures = 0
    for arg in sys.argv[2:]:
        doc, _, minimum = arg.partition(":")
        lines = (source / doc).read_text().splitlines()
        found = 0
        in_block = False
        for i, line in enumerate(lines):
            if line.startswith("```"):
                language = line[3:].strip().lower()
                if not in_block and language in COMPILED and not MARKER.match(lines[i - 1] if i else ""):
                    print(f"{doc}:{i + 1}: a ```{language} block without a snippet marker: "
                          "make it a region of a compiled file")
                    failures += 1
                in_block = not in_block
            m = MARKER.match(line)
            if not m:
                continue
            found += 1
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                print(f"{doc}:{i + 1}: snippet marker not followed by a fenced block")
                failures += 1
                continue
            end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
            if end is None:
                print(f"{doc}:{i + 2}: unterminated fenced block")
                failures += 1
                continue
            block = textwrap.dedent("\n".join(lines[i + 2 : end])).strip("\n")
            want = region(source / m.group(1), m.group(2))
            if block != want:
                print(f"{doc}:{i + 1}: the snippet differs from {m.group(1)} [{m.group(2)}]:")
                print("--- doc\n" + block + "\n--- source\n" + want)
                failures += 1
        if minimum and found < int(minimum):
            print(f"{doc}: {found} snippet markers, expected at least {minimum}")
            failures += 1
        print(f"{doc}: {found} snippet(s) checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
