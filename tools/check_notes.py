#!/usr/bin/env python3
"""Checks that every Note reference names a Note that exists, and every repository path a comment cites exists.

The code base explains a design decision once, in a Note block, and points at it from elsewhere
("see Note [Stream-ordered reuse]"). A reference whose Note was renamed or never written leaves
the reader nowhere; so does a comment naming a file that moved ("see csrc/aten/Fallback.h").
This script lists both and exits 1.

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

Cited paths: in the comments of C++, Python (``#`` comments and docstrings, where Note bodies live
too), CMake and shell files, a token that starts with one of this repository's top-level directories
(PATH_DIRS: ``csrc/``, ``tools/``, ...) or with a directory of an include root (``mlu_runtime/``,
``mlu_kernels/``, ``torch_mlu/``) must name a file or directory that exists: under the repository
root, under an include root (INCLUDE_ROOTS: ``mlu_runtime/host_trap.h``), or next to the citing file
(``csrc/muladd.cpp`` in examples/extension/setup.py). PyTorch's own paths (``torch/csrc/...``,
``ATen/...``, ``aten/src/...``) start elsewhere and are not checked; neither are code and string
literals (tests build made-up trees), Markdown, globs (``kernels/src/*.cpp``), paths under the
root .gitignore's anchored entries (``benchmarks/results/``: outputs the tools write), and the other
projects' files in EXTERNAL_PATHS. Files git ignores are not scanned at all.

    python tools/check_notes.py [--root DIR] [--list]
"""
import argparse
import ast
import importlib.util
import io
import os
import pathlib
import re
import subprocess
import sys
import tokenize

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

# Top-level directories of this repository: a comment's token starting with one of them names our file.
PATH_DIRS = ("csrc", "runtime", "kernels", "torch_mlu", "tools", "tests", "docs", "benchmarks", "examples", "cmake",
             ".ci")
# Include roots (relative to the root; the root itself is one too): `#include <mlu_runtime/queue.h>` and a comment
# citing mlu_runtime/queue.h name runtime/include/mlu_runtime/queue.h. The directories in them start cited paths too.
INCLUDE_ROOTS = ("runtime/include", "kernels/include", "torch_mlu/_inductor/include")
# Paths of other projects that a comment here cites, and whose they are.
EXTERNAL_PATHS = {
    "csrc/adam/multi_tensor_adam.cu": "DeepSpeed's (the reference of tests/test_optimizers.py)",
}
CXX_SUFFIXES = (".cpp", ".cc", ".c", ".h", ".hpp", ".inc")
HASH_COMMENT_SUFFIXES = (".cmake", ".sh")  # and CMakeLists.txt

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
    """The files to scan, less those git ignores (build output such as the headers installed into torch_mlu/)."""
    files = list(candidate_files(root))
    relative = [str(path.relative_to(root)) for path in files]
    try:
        ignored = subprocess.run(["git", "check-ignore", "--stdin"], cwd=root, input="\n".join(relative),
                                 capture_output=True, text=True).stdout.split("\n")
    except OSError:  # no git: scan everything
        ignored = []
    ignored = set(ignored)
    return [path for path, rel in zip(files, relative) if rel not in ignored]


def candidate_files(root):
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


# A C++ comment, or a literal that may hold what looks like one: a raw string, a string, a character (a ' after a
# letter or digit separates digits: 1'000).
CXX_COMMENT_OR_LITERAL = re.compile(r"""(//[^\n]*|/\*.*?(?:\*/|\Z))|R"([^(\s]*)\(.*?\)\2"|"(?:\\.|[^"\\\n])*"|"""
                                    r"""(?<!\w)'(?:\\.|[^'\\\n])*'""", re.S)


def _cxx_comment_spans(text):
    return [m.span(1) for m in CXX_COMMENT_OR_LITERAL.finditer(text) if m.group(1) is not None]


def _python_comment_spans(text):
    """The comments and docstrings of Python source (none if it does not parse)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(line, col):
        return starts[line - 1] + col

    spans = [(offset(*t.start), offset(*t.end)) for t in tokens if t.type == tokenize.COMMENT]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                # Columns are in UTF-8 bytes; the docstring's whole lines are close enough.
                spans.append((offset(first.lineno, 0), offset(first.end_lineno + 1, 0) - 1))
    return spans


def _hash_comment_spans(text):
    spans, start = [], 0
    for line in text.split("\n"):
        m = re.search(r"(?:^|\s)#", line)
        if m:
            spans.append((start + m.end() - 1, start + len(line)))
        start += len(line) + 1
    return spans


def comment_spans(rel, text):
    """(start, end) offsets of the comments (and Python docstrings) of a source file; none for other files."""
    if rel.endswith(CXX_SUFFIXES):
        return _cxx_comment_spans(text)
    if rel.endswith(".py"):
        return _python_comment_spans(text)
    if rel.endswith(HASH_COMMENT_SUFFIXES) or rel.rsplit("/", 1)[-1] == "CMakeLists.txt":
        return _hash_comment_spans(text)
    return []


class PathChecker:
    """Which cited repository paths exist under one root."""

    def __init__(self, root):
        self.root = root
        self.include_roots = [root / r for r in INCLUDE_ROOTS if (root / r).is_dir()]
        firsts = set(PATH_DIRS)
        for include in self.include_roots:
            firsts.update(p.name for p in include.iterdir() if p.is_dir())
        alternatives = "|".join(re.escape(d) for d in sorted(firsts, key=len, reverse=True))
        # Not inside a longer path (torch/csrc/..., a URL).
        self.pattern = re.compile(rf"(?<![\w./-])(?:{alternatives})/[\w./-]*")
        self.outputs = []
        gitignore = root / ".gitignore"
        if gitignore.is_file():
            for line in gitignore.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("/") and not any(ch in line for ch in "*?["):
                    self.outputs.append(line.strip("/"))

    def exists(self, cited, citing_dir):
        if cited in EXTERNAL_PATHS:
            return True
        bare = cited.rstrip("/")
        if any(bare == o or bare.startswith(o + "/") for o in self.outputs):
            return True
        return any((base / bare).exists() for base in (self.root, *self.include_roots, citing_dir))

    def missing(self, path, rel, text):
        """(line, cited path) of each path `text`'s comments cite that does not exist."""
        absent = []
        for m in self.pattern.finditer(text):
            if text[m.end():m.end() + 1] in ("*", "{", "<"):
                continue  # a glob or a template: kernels/src/*.cpp, build-<name>/
            cited = m.group().rstrip(".-")  # a sentence's period is not part of it
            if not self.exists(cited, path.parent):
                absent.append((m.start(), cited))
        if not absent:
            return []  # the common case: no need to find the comments
        spans = comment_spans(rel, text)
        return [(text.count("\n", 0, start) + 1, cited) for start, cited in absent
                if any(s <= start < e for s, e in spans)]


def torch_include_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = pathlib.Path(list(spec.submodule_search_locations)[0]) / "include"
    return include if include.is_dir() else None


def check(root):
    """(problems, definitions, references, cited paths); problems are printable lines."""
    definitions, references, path_problems, paths = {}, [], [], PathChecker(root)
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        if rel in SELF:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            text = None
        if text is not None:
            path_problems.extend(f"{rel}:{line}: cites {cited}, which does not exist"
                                 for line, cited in paths.missing(path, rel, text))
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
    return problems, definitions, references, path_problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--list", action="store_true", help="also list every definition")
    args = parser.parse_args(argv)
    problems, definitions, references, path_problems = check(args.root.resolve())
    if args.list:
        for title in sorted(definitions):
            print(f"Note [{title}]: {', '.join(definitions[title])}")
    if problems:
        print(f"{len(problems)} dangling Note reference(s):")
        for line in problems:
            print("  " + line)
    if path_problems:
        print(f"{len(path_problems)} cited path(s) that do not exist:")
        for line in path_problems:
            print("  " + line)
    if problems or path_problems:
        return 1
    print(f"check_notes: {len(definitions)} Notes, {len(references)} references, none dangling; "
          "every cited path exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
