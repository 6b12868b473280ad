#!/usr/bin/env python3
"""Checks the links of the tree's Markdown documents that point into the tree: every relative
link names an existing file or directory, and every #anchor names a heading of its target (the
anchors GitHub derives from headings). External links (http:, https:, mailto:) are not checked.

    test/docs/check_links.py [FILE.md ...]     default: every tracked *.md file

Exits 1 and prints file:line: problem for each broken link."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def lines_outside_code(text, keep_inline_code=False):
    """(line number, line) pairs outside fenced code blocks, with inline code blanked out unless
    `keep_inline_code` (a heading's anchor keeps its code's text)."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line if keep_inline_code else re.sub(r"`[^`]*`", lambda m: "x" * len(m.group(0)), line)


def anchor_of(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            for _, line in lines_outside_code(f.read(), keep_inline_code=True):
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    base = anchor_of(m.group(1))
                    n = seen.get(base, 0)
                    found.add(base if n == 0 else f"{base}-{n}")
                    seen[base] = n + 1
        cache[path] = found
    return cache[path]


def check(md):
    problems = []
    with open(md, encoding="utf-8") as f:
        text = f.read()
    for number, line in lines_outside_code(text):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            where = f"{os.path.relpath(md, ROOT)}:{number}"
            if not os.path.exists(full):
                problems.append(f"{where}: {target}: no such file")
            elif anchor:
                if not full.endswith(".md") or os.path.isdir(full):
                    problems.append(f"{where}: {target}: an anchor into a file that is not Markdown")
                elif anchor not in anchors(full):
                    problems.append(f"{where}: {target}: no heading with that anchor")
    return problems


def main():
    files = [os.path.abspath(p) for p in sys.argv[1:]]
    if not files:
        listed = subprocess.run(["git", "-C", ROOT, "ls-files", "*.md"], capture_output=True,
                                text=True, check=True).stdout.split()
        files = [os.path.join(ROOT, p) for p in listed]
    problems = [p for md in files for p in check(md)]
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(problems)} broken links", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
