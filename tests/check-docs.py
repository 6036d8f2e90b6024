#!/usr/bin/env python3
"""The docs hold together: README.md stays within 500 words and quotes only numbers that
docs/performance.md has; every relative link of README.md and docs/*.md reaches a file (and its
#anchor); every public header is in docs/reference.md's header map and the map names none that
is gone. Prints what is wrong and exits 1; exits 0 when all holds.

    usage: tests/check-docs.py [REPOSITORY_ROOT]
"""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
problems = []


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    out, seen = set(), {}
    for m in re.finditer(r"^#+\s+(.*)$", text, re.M):
        a = slug(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


readme = read("README.md")
words = len(readme.split())
if words > 500:
    problems.append(f"README.md has {words} words (at most 500)")

# Numbers with a unit in README.md must appear, as written, in docs/performance.md.
perf = read("docs/performance.md")
number = re.compile(r"\d+(?:\.\d+)?(?:[–-]\d+(?:\.\d+)?)?\s?(?:%|µs|×)")
for n in sorted(set(number.findall(readme))):
    if n not in perf:
        problems.append(f"README.md quotes '{n}', which docs/performance.md does not have")

# Relative links and their anchors.
pages = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs")))
                         if f.endswith(".md")]
link = re.compile(r"\]\(([^)\s]+)\)")
for page in pages:
    text = read(page)
    text_no_code = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in link.findall(text_no_code):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(os.path.join(root, dest)):
            problems.append(f"{page}: link to '{target}': no file {dest}")
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(read(dest)):
            problems.append(f"{page}: link to '{target}': {dest} has no heading '#{anchor}'")

# The header map.
ref = read("docs/reference.md")
inc = os.path.join(root, "include", "halox")
headers = sorted(os.path.relpath(os.path.join(d, f), inc)
                 for d, _, fs in os.walk(inc) for f in fs if f.endswith((".hpp", ".h")))
section = ref[ref.index("## Header map"):] if "## Header map" in ref else ""
for h in headers:
    if f"`{h}`" not in section:
        problems.append(f"docs/reference.md: header map misses include/halox/{h}")
rows = "\n".join(l for l in section.splitlines() if l.startswith("| `"))
for named in re.findall(r"`([a-z_]+/[a-z_]+\.hpp)`", rows):
    if not os.path.exists(os.path.join(inc, named)):
        problems.append(f"docs/reference.md: header map names include/halox/{named}, which is gone")

for p in problems:
    print("check-docs:", p)
print(f"check-docs: {len(problems)} problem(s) in README.md and {len(pages) - 1} docs pages")
sys.exit(1 if problems else 0)
