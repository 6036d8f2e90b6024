#!/usr/bin/python3
"""Checks the docs against the repository (stdlib only; run by ctest as test `docs`).

Fails when
- a number with a unit or % in README.md (e.g. `97.6%`, `40 µs`, `2.3×`) is not in docs/performance.md,
- a relative markdown link in README.md or docs/*.md names a missing file or #anchor,
- a header under include/halox/ is missing from the header map in docs/reference.md, or the map
  names a header that does not exist,
- README.md has more than 500 words (as `wc -w` counts them).
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
MAX_README_WORDS = 500
problems = []


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def strip_code_blocks(text):
    return re.sub(r"```.*?```", "", text, flags=re.S)


# Numbers with a unit: 97.6%, 40 µs, 5.5 µs, 2.3×, 16–18 µs, 1 MiB, 256³ is not a unit.
NUMBER = re.compile(r"(\d+(?:\.\d+)?(?:[–-]\d+(?:\.\d+)?)?)\s?(%|µs|us|ms|×|MiB|KiB|GiB|GB/s)")


def check_numbers():
    readme = strip_code_blocks(read("README.md"))
    perf = read("docs/performance.md")
    for m in NUMBER.finditer(readme):
        value, unit = m.group(1), m.group(2)
        if unit in ("MiB", "KiB", "GiB"):
            continue  # sizes name a case, they are not results
        # The same number, not the tail of a longer one (5.5 µs is not in 15.5 µs).
        found = re.search(r"(?<![\d.])" + re.escape(value) + r"\s?" + re.escape(unit), perf)
        if not found:
            problems.append(f"README.md: '{m.group(0)}' does not appear in docs/performance.md")


def github_anchor(heading):
    a = heading.strip().lower()
    a = re.sub(r"[^\w\- ]", "", a)  # GitHub drops punctuation, keeps letters, digits, -, _
    return a.replace(" ", "-")


def anchors_of(path):
    text = strip_code_blocks(open(path, encoding="utf-8").read())
    seen = {}
    out = set()
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        a = github_anchor(title)
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', text):
        out.add(m.group(1))
    return out


LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_links():
    pages = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    for page in pages:
        text = strip_code_blocks(read(page))
        text = re.sub(r"`[^`\n]*`", "", text)
        base = os.path.dirname(os.path.join(ROOT, page))
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(ROOT, page)
            if not os.path.exists(full):
                problems.append(f"{page}: link '{target}': no file {os.path.relpath(full, ROOT)}")
                continue
            if anchor and full.endswith(".md") and anchor not in anchors_of(full):
                problems.append(f"{page}: link '{target}': no heading with anchor #{anchor}")


def check_header_map():
    inc = os.path.join(ROOT, "include", "halox")
    headers = set()
    for d, _, files in os.walk(inc):
        for f in files:
            if f.endswith((".hpp", ".h", ".cuh")):
                headers.add(os.path.relpath(os.path.join(d, f), inc).replace(os.sep, "/"))
    ref = read("docs/reference.md")
    m = re.search(r"^## Header map\n(.*?)(?=^## |\Z)", ref, flags=re.S | re.M)
    if not m:
        problems.append("docs/reference.md: no '## Header map' section")
        return
    named = set()
    for line in m.group(1).splitlines():
        if not line.startswith("|"):
            continue
        first_cell = line.split("|")[1]
        for h in re.findall(r"`([^`]+\.(?:hpp|h|cuh))`", first_cell):
            if not h.startswith("src/"):
                named.add(h)
    for h in sorted(headers - named):
        problems.append(f"docs/reference.md header map: include/halox/{h} is missing")
    for h in sorted(named - headers):
        problems.append(f"docs/reference.md header map: include/halox/{h} does not exist")


def check_readme_length():
    words = len(read("README.md").split())
    if words > MAX_README_WORDS:
        problems.append(f"README.md: {words} words, more than {MAX_README_WORDS}")


check_numbers()
check_links()
check_header_map()
check_readme_length()
for p in problems:
    print(p)
print(f"check-docs: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
