#!/usr/bin/env python3
"""The public line: every header under include/halox/ must be reachable from halox/halox.hpp
(the include closure of its `#include "halox/..."` lines), and no public header may include a
private one (src/<concept>/). Prints what breaks the line and exits 1; exits 0 when it holds.

    usage: tools/public-headers.py [REPOSITORY_ROOT]
"""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
include = os.path.join(root, "include")
src = os.path.join(root, "src")
line = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return line.findall(f.read())


public = sorted(os.path.relpath(os.path.join(d, f), include)
                for d, _, fs in os.walk(os.path.join(include, "halox")) for f in fs)
private = {os.path.relpath(os.path.join(d, f), src)
           for d, _, fs in os.walk(src) for f in fs if f.endswith((".hpp", ".cuh", ".h"))}

reached, todo = set(), ["halox/halox.hpp"]
while todo:
    h = todo.pop()
    if h in reached:
        continue
    reached.add(h)
    todo += [i for i in includes(os.path.join(include, h)) if i in public]

problems = [f"{h}: not reachable from halox/halox.hpp (private? move it to src/)"
            for h in public if h not in reached]
for h in public:
    for i in includes(os.path.join(include, h)):
        if i in private and not i.startswith("halox/"):
            problems.append(f"{h}: includes the private header {i} (src/{i})")
        elif i.startswith("halox/") and i not in public:
            problems.append(f"{h}: includes {i}, which is not under include/")

for p in problems:
    print(p)
print(f"{len(public)} public headers, {len(reached & set(public))} reachable from halox/halox.hpp; "
      f"{len(private)} private headers under src/; {len(problems)} problems")
sys.exit(1 if problems else 0)
