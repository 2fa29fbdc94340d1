#!/usr/bin/env python3
"""Lists the Rust functions longer than N lines (default 80), longest first.

    scripts/long-functions.py [--lines N] [--tests] [--count] [PATH ...]

PATH defaults to `crates` and `src`. A function's length runs from its `fn` line to its
closing brace. Test code (files named `tests.rs` or `*_tests.rs`, the `tests/` folder and
`#[cfg(test)]` modules) is left out unless `--tests` is given. A function whose own lines
(or the line above its attributes) carry a comment with the word "one piece" says why it
is not split: it is listed with `(says why)` and not counted by `--count`.

No dependencies: it reads the source with a small lexer that knows comments, strings, raw
strings and character literals, enough to match braces.
"""

import argparse
import os
import re
import sys

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
REASON = "one piece"


def code_mask(text):
    """The text with comments, strings and character literals blanked (newlines kept), so
    that braces and keywords found in it are code."""
    out = list(text)
    i, n = 0, len(text)

    def blank(start, end):
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif re.match(r'b?r#*"', text[i:i + 260]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', text[i:])
            hashes = m.group(2)
            start = i + len(m.group(0))
            end = text.find('"' + hashes, start)
            end = n if end < 0 else end + 1 + len(hashes)
            blank(i, end)
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A character literal ('x', '\n', '\u{7f}') or a lifetime ('a, 'static).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def test_ranges(code):
    """Offsets of `#[cfg(test)]` items' bodies."""
    ranges = []
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        ranges.append((m.start(), matching(code, brace)))
    return ranges


def matching(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def functions(path, with_tests):
    text = open(path, encoding="utf-8").read()
    code = code_mask(text)
    skip = [] if with_tests else test_ranges(code)
    lines = text.split("\n")
    line_of = lambda offset: code.count("\n", 0, offset)
    for m in FN.finditer(code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # The body: the first `{` after the signature's parentheses; none for a declaration.
        depth, j = 0, m.end()
        while j < len(code):
            ch = code[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch in "{;":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        first, last = line_of(m.start()), line_of(matching(code, j))
        # Its attributes and doc comment, for a reason given above it.
        above = first - 1
        while above >= 0 and re.match(r"\s*(#\[|///|//)", lines[above]):
            above -= 1
        said = "\n".join(lines[above + 1:last + 1])
        yield m.group(1), first + 1, last - first + 1, REASON in said.lower()


def sources(paths, with_tests):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "target" and not d.startswith("."))
            if not with_tests and os.path.basename(folder) == "tests":
                continue
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                if not with_tests and (f == "tests.rs" or f.endswith("_tests.rs")):
                    continue
                yield os.path.join(folder, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", default=["crates", "src"])
    parser.add_argument("--lines", type=int, default=80, help="list functions over this many lines")
    parser.add_argument("--tests", action="store_true", help="include test code")
    parser.add_argument("--count", action="store_true", help="print only how many, without a reason")
    args = parser.parse_args()
    found = [
        (length, path, line, name, said)
        for path in sources(args.paths, args.tests)
        for name, line, length, said in functions(path, args.tests)
        if length > args.lines
    ]
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    if args.count:
        print(sum(1 for f in found if not f[4]))
        return 0
    for length, path, line, name, said in found:
        print(f"{length:5} {path}:{line} {name}{' (says why)' if said else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
