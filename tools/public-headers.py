#!/usr/bin/env python3
"""The public line: every header under include/halox/ must be reachable from halox/halox.hpp
(the include closure of its `#include "halox/..."` lines) or be the C interface halox/halox.h,
no public header may include a private one (src/<concept>/), and at most 15% of the C++ public
headers' lines may sit in `detail` namespaces (the API, not the compiler: docs/concepts.md).
Prints what breaks the line and exits 1; exits 0 when it holds.

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

reached, todo = set(), [h for h in ("halox/halox.hpp", "halox/halox.h") if h in public]
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



def detail_lines(path):
    """Lines inside `namespace detail {` or `namespace halox::detail {` blocks (brace depth)."""
    n, depth, start = 0, 0, None
    with open(path, encoding="utf-8") as f:
        for text in f.read().splitlines():
            code = re.sub(r"//.*", "", text)
            opens = start is None and re.match(r"\s*namespace (halox::)?detail\s*\{", code)
            if opens:
                start = depth
            if start is not None:
                n += 1
            depth += code.count("{") - code.count("}")
            if start is not None and not opens and depth <= start:
                start = None
    return n


hpp = [os.path.join(include, h) for h in public if h.endswith(".hpp")]
total = sum(sum(1 for _ in open(h, encoding="utf-8")) for h in hpp)
inside = sum(detail_lines(h) for h in hpp)
share = inside / total if total else 0
if share > 0.15:
    problems.append(f"{inside} of {total} lines of the C++ public headers ({share:.1%}) are in detail "
                    "namespaces, more than 15%: move the code behind them to src/")
for p in problems:
    print(p)
print(f"detail namespaces: {inside} of {total} public header lines ({share:.1%})")
print(f"{len(public)} public headers, {len(reached & set(public))} reachable from halox/halox.hpp; "
      f"{len(private)} private headers under src/; {len(problems)} problems")
sys.exit(1 if problems else 0)
