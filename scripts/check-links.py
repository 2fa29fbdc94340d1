#!/usr/bin/env python3
"""Checks that every relative link and anchor of the book and of the top-level Markdown files
resolves: run after `mdbook build docs`. The built HTML is checked rather than the Markdown,
so an anchor is the id mdbook really gave a heading. Nothing is fetched: links with a scheme
(https:, mailto:) are left alone.

Usage: scripts/check-links.py [REPO]   (default: the repository holding this script)
"""

import html.parser
import re
import sys
import urllib.parse
from pathlib import Path


class Page(html.parser.HTMLParser):
    """The ids and the link targets of one HTML page."""

    def __init__(self, text):
        super().__init__()
        self.ids = set()
        self.links = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name"):
            if attrs.get(name):
                self.ids.add(attrs[name])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def external(target):
    return bool(urllib.parse.urlsplit(target).scheme) or target.startswith("//")


def check_book(book):
    """Broken links of the built book, and its pages' ids by path."""
    pages = {p: Page(p.read_text(encoding="utf-8")) for p in book.rglob("*.html")}
    broken = []
    count = 0
    for path, page in pages.items():
        for href in page.links:
            if external(href) or href.startswith("/"):
                continue
            count += 1
            target, _, fragment = href.partition("#")
            file = (path.parent / urllib.parse.unquote(target)).resolve() if target else path
            if file.is_dir():
                file = file / "index.html"
            if not file.exists():
                broken.append(f"{path.relative_to(book)}: {href}: no such file")
            elif fragment and file in pages and urllib.parse.unquote(fragment) not in pages[file].ids:
                broken.append(f"{path.relative_to(book)}: {href}: no anchor `{fragment}`")
    return broken, count, {p.resolve(): page.ids for p, page in pages.items()}


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def markdown_links(text):
    """The link targets of a Markdown text, outside code blocks and code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def check_markdown(file, repo, book, book_ids):
    """Broken links of a Markdown file outside the book (README.md, ARCHITECTURE.md)."""
    broken = []
    links = [l for l in markdown_links(file.read_text(encoding="utf-8")) if not external(l)]
    for link in links:
        target, _, fragment = link.partition("#")
        path = (file.parent / target).resolve() if target else file.resolve()
        where = f"{file.relative_to(repo)}: {link}"
        if not path.exists():
            broken.append(f"{where}: no such file")
            continue
        if not fragment:
            continue
        source = (repo / "docs" / "src").resolve()
        if path.suffix == ".md" and source in path.parents:
            built = (book / path.relative_to(source)).with_suffix(".html").resolve()
            ids = book_ids.get(built, set())
        elif path.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), flags=re.M)
            ids = {github_anchor(h) for h in headings}
        else:
            ids = set()
        if fragment not in ids:
            broken.append(f"{where}: no anchor `{fragment}`")
    return broken, len(links)


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent).resolve()
    book = repo / "docs" / "book"
    if not (book / "index.html").exists():
        sys.exit(f"check-links: no built book in {book}; run `mdbook build docs` first")
    broken, count, book_ids = check_book(book)
    for name in ("README.md", "ARCHITECTURE.md"):
        more, n = check_markdown(repo / name, repo, book, book_ids)
        broken += more
        count += n
    for b in broken:
        print(f"check-links: {b}", file=sys.stderr)
    if broken:
        sys.exit(f"check-links: {len(broken)} of {count} relative links do not resolve")
    print(f"check-links: {count} relative links and anchors resolve")


if __name__ == "__main__":
    main()
