#!/usr/bin/env python3
"""Checks that every Note reference names a Note that exists.

The code base explains a design decision once, in a Note block, and points at it from elsewhere
("see Note [Stream-ordered reuse]"). A reference whose Note was renamed or never written leaves
the reader nowhere; this script lists them and exits 1.

What counts as a definition, as the code base writes them:
- a line of a source file whose text, after the comment leader (``//``, ``#``, ``*``) if any,
  starts with the Note, its bracketed title, and then either nothing (the block form: the
  explanation follows on the next lines) or a colon (the inline form: the explanation follows
  on the same line). Lines of a Python docstring count too (torch_mlu/_autograd_exit.py);
- not in docs (``*.md``) nor in test directories (``tests/``, ``kernels/tests/``,
  ``runtime/tests/``): tests and docs point at the Note of the code they exercise or describe,
  even when their line starts with it.

Everything else naming a Note is a reference, including a line that starts with one and goes on
with more than a colon ("... Note [Fast float exp] (AVX-512): ...") and a comment after code on
the same line; "Notes" followed by a list of bracketed titles cites each. A reference may wrap
over comment lines, between "Note" and the title or inside the title; whitespace in titles is
normalised. The few Notes of PyTorch itself that the code cites are listed in EXTERNAL, with the
header that holds them; when torch is installed, the header is checked to still hold the Note.

    python tools/check_notes.py [--root DIR] [--list]
"""
import argparse
import importlib.util
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Scanned (relative to the root): directories walked recursively, and single files.
SCAN_DIRS = ("runtime", "kernels", "csrc", "torch_mlu", "tests", "tools", "docs", "examples", "benchmarks")
SCAN_FILES = ("README.md", "CMakeLists.txt")
SUFFIXES = (".cpp", ".cc", ".c", ".h", ".hpp", ".inc", ".py", ".md", ".txt", ".cmake", ".sh")
SKIP_DIRS = {".git", ".venv", "__pycache__", "node_modules"}
# This script and its test describe Notes without being Notes.
SELF = {"tools/check_notes.py", "tests/test_notes.py"}

# Notes of PyTorch that comments here cite, and the header (under torch's include dir) holding each.
EXTERNAL = {
    "Acquire lock when using random generators": "c10/core/GeneratorImpl.h",
}

# "Note" and a bracketed title, possibly wrapped over lines (joined before matching), or "Notes" and a
# list of them ("Notes [A], [B] and [C]").
NOTE = re.compile(r"Note\s+\[([^\[\]]{1,100})\]")
NOTES = re.compile(r"Notes\s+(\[[^\[\]]{1,100}\](?:\s*(?:,|,?\s*and)\s*\[[^\[\]]{1,100}\])*)")
TITLE = re.compile(r"\[([^\[\]]{1,100})\]")
# A definition line: optional comment leader, then the Note, then end of line or a colon.
DEFINITION = re.compile(r"^\s*(?:(?://+|#+|/?\*+)\s*)?Note \[([^\[\]]{1,100})\]\s*(?::.*)?$")
# A line break and the comment leader of the next line, replaced by one space so wrapped
# references match.
LINE_JOIN = re.compile(r"[ \t]*\n[ \t]*(?:(?://+|#+|\*|>)[ \t]?)?[ \t]*")


def normalise(title):
    return " ".join(title.split())


def source_files(root):
    for name in SCAN_FILES:
        path = root / name
        if path.is_file():
            yield path
    for top in SCAN_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in SKIP_DIRS and not d.startswith("build") and not d.endswith(".egg-info"))
            for filename in sorted(filenames):
                if filename.endswith(SUFFIXES):
                    yield pathlib.Path(dirpath) / filename


def may_define(rel):
    parts = rel.split("/")
    return not rel.endswith(".md") and "tests" not in parts[:-1]


def scan_file(path, rel):
    """(definitions, references) of one file: lists of (title, line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return [], []
    definitions, definition_starts = [], set()
    if may_define(rel):
        offset = 0
        for number, line in enumerate(text.split("\n"), 1):
            m = DEFINITION.match(line)
            if m:
                definitions.append((normalise(m.group(1)), number))
                definition_starts.add(offset + line.index("Note ["))
            offset += len(line) + 1
    # Join wrapped lines, keeping for each joined character its offset in `text`.
    pieces, origin, last = [], [], 0
    for m in LINE_JOIN.finditer(text):
        pieces.append(text[last:m.start()])
        origin.extend(range(last, m.start()))
        pieces.append(" ")
        origin.append(m.start())
        last = m.end()
    pieces.append(text[last:])
    origin.extend(range(last, len(text)))
    joined = "".join(pieces)
    cited = [(m.start(), m.group(1)) for m in NOTE.finditer(joined) if origin[m.start()] not in definition_starts]
    for m in NOTES.finditer(joined):
        cited.extend((m.start(1) + t.start(), t.group(1)) for t in TITLE.finditer(m.group(1)))
    references = []
    for position, title in sorted(cited):
        if '"' in title:  # a title split across string literals (code that writes comments): not checkable
            continue
        start = origin[position]
        references.append((normalise(title), text.count("\n", 0, start) + 1))
    return definitions, references


def torch_include_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = pathlib.Path(list(spec.submodule_search_locations)[0]) / "include"
    return include if include.is_dir() else None


def check(root):
    """(problems, definitions, references); problems are printable lines."""
    definitions, references = {}, []
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        if rel in SELF:
            continue
        defs, refs = scan_file(path, rel)
        for title, line in defs:
            definitions.setdefault(title, []).append(f"{rel}:{line}")
        references.extend((title, f"{rel}:{line}") for title, line in refs)
    problems = []
    include = torch_include_dir()
    for title, where in references:
        if title in definitions:
            continue
        if title in EXTERNAL:
            header = include / EXTERNAL[title] if include else None
            if header is None or f"Note [{title}]" in header.read_text(encoding="utf-8", errors="replace"):
                continue
            problems.append(f"{where}: Note [{title}] is cited as PyTorch's ({EXTERNAL[title]}), "
                            f"which no longer holds it")
            continue
        problems.append(f"{where}: Note [{title}] is defined nowhere")
    return problems, definitions, references


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--list", action="store_true", help="also list every definition")
    args = parser.parse_args(argv)
    problems, definitions, references = check(args.root.resolve())
    if args.list:
        for title in sorted(definitions):
            print(f"Note [{title}]: {', '.join(definitions[title])}")
    if problems:
        print(f"{len(problems)} dangling Note reference(s):")
        for line in problems:
            print("  " + line)
        return 1
    print(f"check_notes: {len(definitions)} Notes, {len(references)} references, none dangling")
    return 0


if __name__ == "__main__":
    sys.exit(main())
