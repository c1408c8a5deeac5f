#!/usr/bin/env python3
"""Finds `unsafe` blocks in Rust sources that carry no `// SAFETY:` comment.

    python3 tests/tools/safety_comments.py PATH [PATH ...]

Each PATH is a .rs file or a folder searched for .rs files (folders named `target` or starting
with a dot are skipped). A line that opens an unsafe block (`unsafe {`, `unsafe{`, also
`unsafe` at the end of a line with the brace on the next) is documented when the comment lines
above it (blank lines and `#[...]` attribute lines skipped) hold `SAFETY:`, in `//` or `/* */`
comments. Where the block is the value of a `let` or an assignment whose `=` ends the line
before, the comment may stand above that statement instead. These are the places clippy's
`undocumented_unsafe_blocks` accepts; a comment above a call whose argument the block is, on a
line of its own, is not one of them. Blocks on one line share its comment. Text inside comments
and string literals is not searched for `unsafe`, so a doc example or a message naming it is no
block; `unsafe fn`, `unsafe impl` and `unsafe extern` are no blocks either.

Every undocumented block is printed as FILE:LINE with its line, and the exit status is 1. With
none it prints one line with the number of blocks checked and exits 0.
"""
import os
import re
import sys

UNSAFE_RE = re.compile(r"\bunsafe\s*(\{|$)")
# A `let` or an assignment whose value is on the next line (`=`, not `==`, `<=`, `=>` and the like).
VALUE_FOLLOWS_RE = re.compile(r"(^|[^=!<>+\-*/%&|^])=$")
ATTRIBUTE_RE = re.compile(r"^#!?\[")


def code_lines(text):
    """The text's lines with comments and the insides of string and char literals blanked, and,
    per line, the comment text it holds (for the SAFETY search)."""
    code, comments = [], []
    i, n = 0, len(text)
    line_code, line_comment = [], []
    depth = 0  # nesting of /* */
    while i < n:
        c = text[i]
        if c == "\n":
            code.append("".join(line_code))
            comments.append("".join(line_comment))
            line_code, line_comment = [], []
            i += 1
            continue
        if depth:
            if text.startswith("*/", i):
                depth -= 1
                line_comment.append("*/")
                i += 2
            elif text.startswith("/*", i):
                depth += 1
                line_comment.append("/*")
                i += 2
            else:
                line_comment.append(c)
                i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            line_comment.append(text[i:j])
            i = j
            continue
        if text.startswith("/*", i):
            depth = 1
            line_comment.append("/*")
            i += 2
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 260]) if c in "br" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if m:
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            body = text[i:end]
            line_code.append('""')
            # Keep the line count: a raw string may span lines.
            for _ in range(body.count("\n")):
                code.append("".join(line_code))
                comments.append("".join(line_comment))
                line_code, line_comment = [], []
            i = end
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            body = text[i:j + 1]
            line_code.append('""')
            for _ in range(body.count("\n")):
                code.append("".join(line_code))
                comments.append("".join(line_comment))
                line_code, line_comment = [], []
            i = j + 1
            continue
        if c == "'":
            # A char literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                line_code.append("' '")
                i += len(m.group(0))
                continue
        line_code.append(c)
        i += 1
    code.append("".join(line_code))
    comments.append("".join(line_comment))
    return code, comments


def documented(code, comments, k):
    """Whether the unsafe block opened on line k (0-based) has a SAFETY comment above it, or above
    the `let` or assignment whose value it is."""
    j = k - 1
    while j >= 0:
        c, com = code[j].strip(), comments[j].strip()
        if not c and not com:
            j -= 1
            continue
        if not c:
            # A run of comment lines: documented if any of them says SAFETY:.
            run = []
            while j >= 0 and not code[j].strip() and comments[j].strip():
                run.append(comments[j])
                j -= 1
            if any("SAFETY:" in line for line in run):
                return True
            # Comments that say something else: the attributes or statement above may still hold it.
            continue
        if ATTRIBUTE_RE.match(c):
            j -= 1
            continue
        if VALUE_FOLLOWS_RE.search(c):
            # `let x =` / `x =` with the block as its value: the comment may stand above the statement.
            if "SAFETY:" in com:
                return True
            j -= 1
            continue
        return False
    return False


def check_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code, comments = code_lines(text)
    blocks, misses = 0, []
    lines = text.splitlines()
    for k, line in enumerate(code):
        # Blocks on one line share its comment (`assert_eq!(unsafe { a }, unsafe { b })`).
        opened = [m for m in UNSAFE_RE.finditer(line)
                  if m.group(1) or (k + 1 < len(code) and code[k + 1].lstrip().startswith("{"))]
        blocks += len(opened)
        if opened and not documented(code, comments, k):
            misses += [(k + 1, lines[k].strip())] * len(opened)
    return blocks, misses


def rust_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d != "target" and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".rs"):
                    yield os.path.join(root, name)


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    total, missing = 0, []
    for path in rust_files(argv):
        blocks, misses = check_file(path)
        total += blocks
        missing += [(path, line, text) for line, text in misses]
    for path, line, text in missing:
        print(f"{path}:{line}: unsafe block without a // SAFETY: comment: {text}")
    if missing:
        print(f"safety comments: {len(missing)} of {total} unsafe blocks undocumented")
        return 1
    print(f"safety comments: all {total} unsafe blocks documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
