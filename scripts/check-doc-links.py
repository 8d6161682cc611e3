#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails on a reference in the docs that a reader of the repository cannot follow.

Checked in README.md, CHANGELOG.md and docs/*.md:
- every relative Markdown link names a file or directory that exists, and its #anchor (if
  any) a heading of that page (GitHub's slugs);
- outside CHANGELOG.md, no "issue N" / "the issue's ...": the issues are not in the
  repository, so say what was measured or decided instead.
Usage: scripts/check-doc-links.py [ROOT]   (default: the checkout this script is in)
"""
import pathlib
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
ISSUE = re.compile(r"\bissue(?:'s| \d+| #\d+)|\bissues \d+", re.IGNORECASE)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path):
    """(number, line) of the lines outside fenced code blocks."""
    inside = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        names = set()
        for _, line in prose_lines(path):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            names.add(base if count == 0 else f"{base}-{count}")
        for explicit in re.findall(r'<a (?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")):
            names.add(explicit)
        cache[path] = names
    return cache[path]


def check(root):
    pages = [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md"))]
    problems = []
    for page in pages:
        if not page.exists():
            continue
        where = page.relative_to(root)
        for number, line in prose_lines(page):
            for pattern in (LINK, IMAGE):
                for target in pattern.findall(line):
                    if re.match(r"[a-z][a-z0-9+.-]*:", target):
                        continue  # https:, mailto: ...
                    file_part, _, anchor = target.partition("#")
                    dest = (page.parent / file_part).resolve() if file_part else page
                    if not dest.exists():
                        problems.append(f"{where}:{number}: link to a missing file: {target}")
                    elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                        problems.append(f"{where}:{number}: no heading for #{anchor} in "
                                        f"{dest.relative_to(root)}")
            if page.name != "CHANGELOG.md":
                for found in ISSUE.findall(line):
                    problems.append(f"{where}:{number}: '{found}': the reader has no issues, "
                                    "say what was measured or decided")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    problems = check(root.resolve())
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"doc links: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
