#!/usr/bin/env python3
"""`make lint`: the checks that need no build, run before anything is compiled (docs/testing.md).

Each check prints one line, "ok" or what is wrong; the script exits 1 if any check failed.

- layering: runtime/ and kernels/ include no torch header (docs/design.md: the torch-free layers).
- notes: every Note reference names a Note that exists, and every repository path a comment cites exists
  (tools/check_notes.py).
- generated: the committed generated files are current (their generators' --check).
- hygiene: no build output is tracked (object files, ninja and CMake files, build folders, compiled Python).
- trap-skips: no test decides for itself to skip under the host-access trap; the `untrapped` marker does
  (tests/conftest.py), so every test runs in one pass of `make test` or the other.
- ruff: the Python tree passes the rules in pyproject.toml.
- device-pointers: kernels take their pointers from device_ptr (Note [Device pointers] in csrc/core/MLULaunch.h):
  no mluDevicePointer, kernel_data, device_data or host_trap.h include outside DEVICE_POINTER_ALLOWED, and no
  tensor data_ptr() inside a launch_kernel call (its closure), so a forgotten translation fails here rather than
  only under the host-access trap.
- docs-links: every relative link in a Markdown file tracked by git ([text](path), [label]: path) names a file
  or folder that exists; web and mail links, pure #anchors and code are not checked, and a #fragment is dropped.
- changed lines: every line changed since the lint stage came in (the parent of the commit that added
  .clang-format) is formatted as .clang-format says (C++) and at most 120 columns long (Python); older
  lines are left alone until someone edits them, also when their file has moved since. Vendored code
  (VENDORED) keeps its upstream's style.

    python tools/lint.py [--only NAME ...]
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CXX_SUFFIXES = (".cpp", ".h", ".hpp", ".cc", ".c", ".inc")
LINE_LIMIT = 120
# Code copied from other projects, in their style (kernels/third_party/aten_math/README.md): the changed-lines
# rule leaves it alone.
VENDORED = ("kernels/third_party/",)


def run(*command, **kwargs):
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, **kwargs)


def git_files():
    result = run("git", "ls-files")
    return result.stdout.split() if result.returncode == 0 else None


# --- checks: each returns a list of problems (empty: ok) -----------------------------------------------

TORCH_INCLUDE = re.compile(r'#\s*include\s*[<"](ATen|c10|torch)/')


def check_layering():
    problems = []
    for layer in ("runtime", "kernels"):
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix not in CXX_SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if TORCH_INCLUDE.search(line):
                    problems.append(f"{path.relative_to(ROOT)}:{number}: torch header in a torch-free layer: "
                                    f"{line.strip()}")
    return problems


def check_notes():
    result = run(PYTHON, "tools/check_notes.py")
    return [] if result.returncode == 0 else [(result.stdout + result.stderr).strip()]


GENERATORS = ("tools/gen_device_checks.py", "tools/gen_sparse_generic_ops.py")


def check_generated():
    problems = []
    for generator in GENERATORS:
        result = run(PYTHON, generator, "--check")
        if result.returncode != 0:
            problems.append(f"{generator} --check: {(result.stdout + result.stderr).strip()}")
    return problems


# Build output, anywhere in the tree.
BUILD_OUTPUT = re.compile(r"(^|/)(build|build-[^/]*|__pycache__|CMakeFiles)/|\.(o|obj|a|so|pyc|whl)$|"
                          r"(^|/)(\.ninja_log|\.ninja_deps|build\.ninja|CMakeCache\.txt)$")


def check_hygiene():
    files = git_files()
    if files is None:
        return []  # not a git checkout: nothing is tracked
    return [f"{name}: build output is tracked (remove it; .gitignore ignores it)"
            for name in files if BUILD_OUTPUT.search(name)]


TRAP_VARIABLE = "TORCH_MLU_TRAP_HOST_ACCESS"
# conftest.py reads it to apply the markers; test_host_trap.py sets it for the subprocesses it starts.
TRAP_READERS = {"tests/conftest.py", "tests/test_host_trap.py"}


def check_trap_skips():
    problems = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in TRAP_READERS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if TRAP_VARIABLE in line:
                problems.append(f"{rel}:{number}: reads {TRAP_VARIABLE}; mark the test @pytest.mark.untrapped "
                                "instead (tests/conftest.py)")
    return problems


def ruff():
    local = pathlib.Path(PYTHON).parent / "ruff"
    return str(local) if local.exists() else shutil.which("ruff")


def check_ruff():
    command = ruff()
    if command is None:
        return ["ruff is not installed (tools/bootstrap.sh installs it into .venv)"]
    result = run(command, "check", "--quiet", ".")
    return [] if result.returncode == 0 else [result.stdout.strip() or result.stderr.strip()]


# A Markdown link `[text](target "title")` or a reference definition `[label]: target`; fenced code blocks and
# inline code spans are skipped before matching.
MD_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
MD_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?")
MD_FENCE = re.compile(r"^\s*(```|~~~)")
MD_CODE_SPAN = re.compile(r"(`+).*?\1")
# A target with a URL scheme (https:, mailto:, ...) points outside the tree.
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_links(text):
    """(line number, target) of each link outside code in a Markdown text."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = MD_FENCE.match(line)
        if opening:
            if fence is None:
                fence = opening.group(1)
            elif opening.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        line = MD_CODE_SPAN.sub("", line)
        for m in MD_LINK.finditer(line):
            yield number, m.group(1)
        m = MD_REFERENCE.match(line)
        if m:
            yield number, m.group(1)


def check_doc_links():
    files = git_files()
    if files is None:
        return []  # not a git checkout: no list of tracked pages
    problems = []
    for name in files:
        path = ROOT / name
        if not name.endswith(".md") or not path.is_file():
            continue
        for number, target in markdown_links(path.read_text(errors="replace")):
            if URL_SCHEME.match(target) or target.startswith("#"):
                continue
            relative = target.split("#", 1)[0].split("?", 1)[0]
            if not relative:
                continue
            resolved = ROOT / relative.lstrip("/") if relative.startswith("/") else path.parent / relative
            if not resolved.exists():
                problems.append(f"{name}:{number}: the link to {target} names no file")
    return problems


def lint_base():
    """The commit before the one that added .clang-format, or None outside a git checkout."""
    if run("git", "rev-parse", "--git-dir").returncode != 0:
        return None
    added = run("git", "log", "--diff-filter=A", "--format=%H", "--", ".clang-format").stdout.split()
    if not added:
        return "HEAD"  # .clang-format not committed yet: the working tree's changes are the new lines
    parent = run("git", "rev-parse", "--verify", "--quiet", added[-1] + "^")
    if parent.returncode != 0:
        raise SystemExit("lint: the history before .clang-format came in is missing (a shallow clone?); "
                         "fetch the whole history to check changed lines")
    return parent.stdout.strip()


def changed_lines(base, suffixes):
    """{path: set of line numbers} of lines added or changed since `base`, in the working tree."""
    # A moved file (git mv) counts only the lines that changed with the move: the rest are as old as before.
    diff = run("git", "diff", "--unified=0", "--no-color", "--find-renames", "--diff-filter=AMR", base, "--").stdout
    lines, path = {}, None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[6:] if line.startswith("+++ b/") else None
            path = name if name and name.endswith(suffixes) else None
        elif path and line.startswith("@@"):
            start, _, count = re.search(r"\+(\d+)(,(\d+))?", line).groups()
            count = 1 if count is None else int(count)
            lines.setdefault(path, set()).update(range(int(start), int(start) + count))
    return lines


def check_changed_lines():
    base = lint_base()
    if base is None:
        print("  (not a git checkout: no changed lines to check)")
        return []
    problems = []
    for path, numbers in sorted(changed_lines(base, (".py",)).items()):
        text = (ROOT / path).read_text().splitlines()
        for number in sorted(numbers):
            if number <= len(text) and len(text[number - 1]) > LINE_LIMIT:
                problems.append(f"{path}:{number}: {len(text[number - 1])} columns (at most {LINE_LIMIT})")
    cxx = {path: numbers for path, numbers in changed_lines(base, CXX_SUFFIXES).items()
           if not path.startswith(VENDORED)}
    formatter = shutil.which("clang-format")
    if cxx and formatter is None:
        return problems + ["clang-format is not installed (tools/bootstrap.sh installs Debian's clang-format)"]
    for path, numbers in sorted(cxx.items()):
        if not numbers:
            continue  # only deletions: no --lines would format the whole file
        ranges = [f"--lines={n}:{n}" for n in sorted(numbers)]
        result = run(formatter, "--style=file", "--dry-run", "--Werror", *ranges, path)
        if result.returncode != 0:
            found = sorted(set(re.findall(rf"^{re.escape(path)}:(\d+):", result.stderr, re.M)), key=int)
            where = f"line {found[0]} is" if len(found) == 1 else f"lines {', '.join(found) or '?'} are"
            problems.append(f"{path}: {where} not formatted as .clang-format says "
                            f"(clang-format -i --lines=N:M {path})")
    return problems


# Note [Device pointers] (csrc/core/MLULaunch.h): a kernel dereferences only what device_ptr returned. These
# files may spell the translation themselves (a path ending in "/" covers a folder).
DEVICE_POINTER_ALLOWED = {
    "csrc/core/MLULaunch.h": "the accessor itself: device_ptr is mlu::mluDevicePointer of the tensor's data",
    "runtime/": "the runtime: mluDevicePointer is its C API (host_trap.h), its copies translate internally and "
                "its tests exercise the translation",
}
DEVICE_POINTER_ACCESSOR = "device_ptr<T>(tensor) (device_ptr(ptr) for a raw pointer) from csrc/core/MLULaunch.h"
# The other spellings of the translation, and the header that offers it.
OTHER_DEVICE_POINTERS = re.compile(r"\b(mluDevicePointer\s*\(|kernel_data\s*\(|device_data\s*<)")
HOST_TRAP_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]mlu_runtime/host_trap\.h[>"]')
LAUNCH = re.compile(r"\blaunch_(small_)?kernel\s*\(")
DATA_PTR = re.compile(r"\b(data_ptr|mutable_data_ptr|const_data_ptr)\s*[(<]")


def code_only(text):
    """text with comments and the contents of string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 is a digit separator
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n and text[j] == c else ""))
            i = j + 1 if j < n and text[j] == c else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def launch_calls(code):
    """(match of `launch_kernel(`, offset past its closing parenthesis) for each launch in `code` (code_only's)."""
    for launch in LAUNCH.finditer(code):
        depth, end = 1, launch.end()
        while end < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        yield launch, end


def device_pointer_problems(path, text):
    """The device-pointer rule for one file: `path` relative to the root, `text` its contents."""
    if any(path == allowed or (allowed.endswith("/") and path.startswith(allowed))
           for allowed in DEVICE_POINTER_ALLOWED):
        return []
    problems = []
    code = code_only(text)
    for number, (line, raw) in enumerate(zip(code.splitlines(), text.splitlines()), 1):
        if HOST_TRAP_INCLUDE.search(raw):
            problems.append(f"{path}:{number}: includes mlu_runtime/host_trap.h for the device-pointer "
                            f"translation; use {DEVICE_POINTER_ACCESSOR}")
        for match in OTHER_DEVICE_POINTERS.finditer(line):
            problems.append(f"{path}:{number}: {match.group(1).rstrip('(<').strip()} translates a device pointer "
                            f"by hand; use {DEVICE_POINTER_ACCESSOR}")
    # A tensor's own pointer inside a kernel launch (its closure): the host address, not the device's.
    for launch, end in launch_calls(code):
        for match in DATA_PTR.finditer(code, launch.end(), end):
            number = code.count("\n", 0, match.start()) + 1
            problems.append(f"{path}:{number}: {match.group(1)}() inside a {launch.group(0).rstrip('( ')} "
                            f"closure is the host's address of the tensor's memory; capture "
                            f"{DEVICE_POINTER_ACCESSOR} outside the closure")
    return problems


def device_pointer_sources():
    """The C++ files the device-pointer rule reads: tracked or not ignored (outside git: the source folders)."""
    result = run("git", "ls-files", "--cached", "--others", "--exclude-standard")
    if result.returncode == 0:
        names = sorted(set(result.stdout.split()))
    else:
        names = sorted(str(p.relative_to(ROOT)) for folder in ("csrc", "runtime", "kernels", "examples", "torch_mlu")
                       for p in (ROOT / folder).rglob("*") if p.is_file())
    return [name for name in names if name.endswith(CXX_SUFFIXES) and (ROOT / name).is_file()]


def check_device_pointers():
    problems = []
    for name in device_pointer_sources():
        problems += device_pointer_problems(name, (ROOT / name).read_text(errors="replace"))
    return problems


CHECKS = {
    "layering": check_layering,
    "notes": check_notes,
    "generated": check_generated,
    "hygiene": check_hygiene,
    "trap-skips": check_trap_skips,
    "ruff": check_ruff,
    "device-pointers": check_device_pointers,
    "docs-links": check_doc_links,
    "changed-lines": check_changed_lines,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(CHECKS), help="run these checks only")
    args = parser.parse_args()
    failed = []
    for name in args.only or CHECKS:
        problems = CHECKS[name]()
        print(f"lint {name}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        for problem in problems:
            print("  " + problem.replace("\n", "\n  "))
        if problems:
            failed.append(name)
    if failed:
        print(f"lint: failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
