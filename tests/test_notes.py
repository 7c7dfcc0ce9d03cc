"""tools/check_notes.py: every Note reference names a Note that exists, every path a comment cites exists.

Runs the checker on this checkout, then on small made-up trees that pin down its rules: what
counts as a definition (the block and the inline form, docstring lines; not tests' or docs' lines)
and that references wrapped over comment lines, or listed after "Notes", are still found.
"""
import subprocess
import sys
import textwrap

from conftest import REPO

CHECKER = f"{REPO}/tools/check_notes.py"


def run_checker(*args):
    return subprocess.run([sys.executable, CHECKER, *args], capture_output=True, text=True, timeout=60, cwd=REPO)


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_no_dangling_note_references():
    result = run_checker()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "none dangling" in result.stdout


def test_definition_forms_and_wrapped_references(tmp_path):
    write_tree(tmp_path, {
        "csrc/a.h": """\
            // Note [Block form]
            // The explanation follows.
            // Note [Inline form]: explained on this line.
            int x;  // Note [Block form]: after code, a reference.
            """,
        "torch_mlu/m.py": '''\
            """Module.

            Note [Docstring form]
            Explained here.
            """
            ''',
        "kernels/src/b.cpp": """\
            // As in Note [Block form] and Note
            // [Inline form]; see also Note [Docstring
            // form].
            """,
        "docs/x.md": "See Note [Block form] and Note\n[Inline form].\n",
    })
    result = run_checker("--root", str(tmp_path))
    assert result.returncode == 0, result.stdout
    assert "3 Notes, 6 references" in result.stdout


def test_dangling_references_are_listed(tmp_path):
    write_tree(tmp_path, {
        "csrc/a.cpp": """\
            // Note [Real]
            // Text.
            // Uses Note [Real] and Note [Missing
            // one], twice: Note [Missing one].
            // Notes [Real], [Missing
            // two] and [Real].
            """,
        # A test line starting with a Note points at it; it defines nothing.
        "tests/test_a.py": "# Note [Only in a test]: exercised here.\n",
        # So does a line that goes on past the title with more than a colon, or a comment after code.
        "kernels/src/c.cpp": "// Note [Continued] over 26 intervals.\nint x;  // Note [After code]\n",
        "README.md": "Note [Only in docs]\n",
    })
    result = run_checker("--root", str(tmp_path))
    assert result.returncode == 1
    out = result.stdout
    assert "csrc/a.cpp:3: Note [Missing one] is defined nowhere" in out
    assert "csrc/a.cpp:4: Note [Missing one] is defined nowhere" in out
    assert "csrc/a.cpp:5: Note [Missing two] is defined nowhere" in out
    assert "tests/test_a.py:1: Note [Only in a test]" in out
    assert "kernels/src/c.cpp:1: Note [Continued]" in out
    assert "kernels/src/c.cpp:2: Note [After code]" in out
    assert "README.md:1: Note [Only in docs]" in out
    assert "Note [Real]" not in out


def test_cited_paths_must_exist(tmp_path):
    write_tree(tmp_path, {
        ".gitignore": "/benchmarks/results/\n*.so\n",
        "runtime/include/mlu_runtime/queue.h": "// The queue; see runtime/src/queue.cpp.\n",
        "runtime/src/queue.cpp": "",
        "kernels/tools/probe.cpp": "",
        "kernels/CMakeLists.txt": "add_executable(probe tools/probe.cpp)  # tools/probe.cpp, next to this file\n",
        "csrc/a.cpp": """\
            #include <mlu_runtime/queue.h>  // mlu_runtime/queue.h: an include root's path
            // As csrc/aten/Gone.h did (see mlu_runtime/gone.h); kernels/src/*.cpp and
            // torch/csrc/autograd/engine.cpp are not checked, nor is ATen/native/Copy.cpp.
            const char* s = "tools/made_up.py";  /* code is not a comment,
               but this is: docs/missing.md. */
            """,
        "tools/t.py": '''\
            """Writes benchmarks/results/t.json (an output); reads tools/gone.py."""
            PATH = "tests/test_made_up.py"  # a literal is not checked; tests/test_gone.py is
            ''',
    })
    result = run_checker("--root", str(tmp_path))
    assert result.returncode == 1, result.stdout
    missing = [line.strip() for line in result.stdout.splitlines() if line.startswith("  ")]
    assert missing == [
        "csrc/a.cpp:2: cites csrc/aten/Gone.h, which does not exist",
        "csrc/a.cpp:2: cites mlu_runtime/gone.h, which does not exist",
        "csrc/a.cpp:5: cites docs/missing.md, which does not exist",
        "tools/t.py:1: cites tools/gone.py, which does not exist",
        "tools/t.py:2: cites tests/test_gone.py, which does not exist",
    ], result.stdout
