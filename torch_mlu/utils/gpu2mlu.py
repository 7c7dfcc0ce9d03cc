"""``torch_mlu_convert``: writes an mlu copy of a CUDA script or source tree, with a report.

    torch_mlu_convert -i train.py            # -> train_mlu.py and train_mlu.report.md
    torch_mlu_convert -i project/            # -> project_mlu/ (every file copied) and project_mlu/report.md

Python files are read with the ``ast`` module and changed only where the syntax proves a device
reference (Note [What the converter changes]); everything else, comments and other strings included,
is copied byte for byte. The report lists each changed line (before / after) and, separately, what
it could not convert: custom CUDA kernels and libraries, ``torch.cuda`` names torch.mlu lacks, and
strings that mention CUDA in prose.

Note [What the converter changes]:
- ``torch.cuda`` -> ``torch.mlu`` wherever it is an attribute of ``torch`` or an imported module path
  (``import torch.cuda.amp``, ``from torch.cuda import ...``); ``torch.cuda.nccl`` / ``nvtx`` /
  ``CUDAGraph`` -> ``cncl`` / ``cnpx`` / ``MLUGraph``.
- The method calls ``.cuda(...)`` -> ``.mlu(...)`` and the attribute ``.is_cuda`` -> ``.is_mlu``.
- String literals whose whole value is a device or backend: ``"cuda"``, ``"cuda:N"``, ``"nccl"``, and
  f-strings ``f"cuda:{i}"``; legacy type names (``"torch.cuda.FloatTensor"``); literals that are exactly
  a CUDA environment variable name with an mlu counterpart (``"CUDA_VISIBLE_DEVICES"`` ->
  ``"MLU_VISIBLE_DEVICES"``).
- ``torch.amp.GradScaler()`` with no device (CUDA's default) gets ``"mlu"``.
"""
import argparse
import ast
import io
import os
import re
import shutil
import sys
import tokenize

from torch_mlu.utils.cuda_environment import MAPPED as ENV_NAMES

_DEVICE_STRING = re.compile(r"cuda(:\d+)?")
_LEGACY_TYPE_NAME = re.compile(r"torch\.cuda\.[A-Z][A-Za-z0-9]*Tensor")
_CUDA_ATTRIBUTE_RENAMES = {"nccl": "cncl", "nvtx": "cnpx", "CUDAGraph": "MLUGraph"}
# torch.cuda names with no mlu counterpart in torch_mlu (left as they are, and reported).
_NO_MLU_COUNTERPART = {"jiterator", "CUDAPluggableAllocator", "change_current_allocator", "tunable", "comm",
                       "set_sync_debug_mode", "get_sync_debug_mode", "memory_usage", "temperature",
                       "power_draw", "clock_rate", "cudart", "check_error", "sparse"}
# Imports that bring CUDA code the converter cannot port.
_CUDA_ONLY_MODULES = {"cupy": "CuPy runs CUDA kernels", "pycuda": "PyCUDA runs CUDA kernels",
                      "numba.cuda": "Numba CUDA kernels", "triton": "Triton kernels target CUDA GPUs here",
                      "apex": "NVIDIA Apex builds CUDA extensions", "flash_attn": "FlashAttention is CUDA code",
                      "xformers": "xFormers kernels are CUDA code", "bitsandbytes": "bitsandbytes is CUDA code"}
_CUDA_EXTENSION_NAMES = {"CUDAExtension", "load_inline", "load"}


class Converter(ast.NodeVisitor):
    """Collects the edits of one module: (line, col, end_line, end_col, text), 1-based lines."""

    def __init__(self, source):
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.edits = []
        self.unconverted = []  # (line, what, why)
        self.grad_scaler_names = set()  # local names bound to torch.amp's GradScaler
        self.left_as_cuda = set()  # ids of torch.cuda nodes under a name torch.mlu lacks

    # -- edits -----------------------------------------------------------------------------------
    def replace(self, node_start, node_end, text):
        self.edits.append((*node_start, *node_end, text))

    def replace_attr_name(self, node, new_name):
        # An Attribute ends with its attribute name, so the name is the last len(attr) characters.
        self.replace((node.end_lineno, node.end_col_offset - len(node.attr)), (node.end_lineno, node.end_col_offset),
                     new_name)

    def unconvertible(self, node, what, why):
        self.unconverted.append((node.lineno, what, why))

    # -- visitors --------------------------------------------------------------------------------
    def visit_Attribute(self, node):
        if _is_torch_cuda(node):
            if id(node) not in self.left_as_cuda:
                self.replace_attr_name(node, "mlu")
        elif _is_torch_cuda(node.value):
            if node.attr in _CUDA_ATTRIBUTE_RENAMES:
                self.replace_attr_name(node, _CUDA_ATTRIBUTE_RENAMES[node.attr])
            elif node.attr == "get_device_capability":
                self.unconvertible(node, "torch.cuda.get_device_capability", "torch.mlu reports the MLU's own "
                                   "version (5, 9), not a CUDA compute capability: check gates such as >= (8, 0)")
            elif node.attr in _NO_MLU_COUNTERPART:
                self.left_as_cuda.add(id(node.value))
                self.unconvertible(node, f"torch.cuda.{node.attr}", "torch.mlu has no counterpart: left as it is")
        elif node.attr == "is_cuda":
            self.replace_attr_name(node, "is_mlu")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda" and not _is_torch_name(func.value):
            self.replace_attr_name(func, "mlu")
        if self._is_grad_scaler(func) and not node.args and not any(k.arg == "device" for k in node.keywords):
            self._insert_first_argument(node, '"mlu"')
        if _dotted(func) in {"torch.utils.cpp_extension.CUDAExtension", "CUDAExtension"} or (
                _dotted(func) in {"torch.utils.cpp_extension.load", "cpp_extension.load", "load_inline",
                                  "torch.utils.cpp_extension.load_inline"} and _mentions_cuda_sources(node)):
            self.unconvertible(node, _dotted(func), "builds a custom CUDA kernel: port it to an mlu kernel")
        self.generic_visit(node)

    def _insert_first_argument(self, call, text):
        line = self.lines[call.func.end_lineno - 1].encode()
        paren = line.find(b"(", call.func.end_col_offset)
        if paren < 0:  # the parenthesis is on another line: leave the call and say so
            self.unconvertible(call, _dotted(call.func), "add the device argument \"mlu\" by hand")
            return
        at = (call.func.end_lineno, paren + 1)
        self.replace(at, at, text + (", " if call.keywords else ""))

    def _is_grad_scaler(self, func):
        name = _dotted(func)
        return name in {"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"} or (
            isinstance(func, ast.Name) and func.id in self.grad_scaler_names)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.lineno == node.end_lineno:
            new = _converted_string(node.value)
            if new is not None:
                self._replace_string_body(node, node.value, new)
            elif "cuda" in node.value.lower() or "nccl" in node.value.lower():
                self.unconvertible(node, repr(node.value), "a string that mentions CUDA but is not a device "
                                   "reference: left as it is; check it")

    def visit_JoinedStr(self, node):
        # f"cuda:{rank}": a leading "cuda:" literal part followed only by one formatted value.
        parts = node.values
        if (len(parts) == 2 and isinstance(parts[0], ast.Constant) and parts[0].value == "cuda:"
                and isinstance(parts[1], ast.FormattedValue)):
            text = self._segment(node)
            if text is not None and "cuda:" in text:
                offset = text.index("cuda:")
                start = (node.lineno, node.col_offset + offset)
                self.replace(start, (node.lineno, start[1] + 4), "mlu")
            return
        self.generic_visit(node)

    def visit_Import(self, node):
        for alias in node.names:
            self._check_cuda_only_module(node, alias.name)
        self._rename_module_path(node)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        self._check_cuda_only_module(node, module)
        if module in {"torch.amp", "torch.amp.grad_scaler"}:
            self.grad_scaler_names.update(a.asname or a.name for a in node.names if a.name == "GradScaler")
        if module.startswith("torch.utils.cpp_extension") or module == "torch.utils":
            for alias in node.names:
                if alias.name == "CUDAExtension":
                    self.unconvertible(node, "CUDAExtension", "builds a custom CUDA kernel: port it to an mlu kernel")
        if module == "torch.cuda" or module.startswith("torch.cuda."):
            self._rename_module_path(node)
            for alias in node.names:
                if alias.name in _CUDA_ATTRIBUTE_RENAMES:
                    # The code below uses the CUDA name: keep it as the alias.
                    new = _CUDA_ATTRIBUTE_RENAMES[alias.name]
                    self._rename_import_name(node, alias.name, new if alias.asname else f"{new} as {alias.name}")

    def _check_cuda_only_module(self, node, module):
        for name, why in _CUDA_ONLY_MODULES.items():
            if module == name or module.startswith(name + "."):
                self.unconvertible(node, f"import {module}", why)

    def _statement_tokens(self, node):
        text = "".join(self.lines[node.lineno - 1:node.end_lineno])
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            yield tok, node.lineno - 1

    def replace_token(self, tok, line_offset, text):
        # tokenize counts characters, ast (and our edits) UTF-8 bytes.
        line = tok.start[0] + line_offset
        start = len(self.lines[line - 1][:tok.start[1]].encode())
        self.replace((line, start), (line, start + len(tok.string.encode())), text)

    def _rename_module_path(self, node):
        # `torch . cuda` in the statement's module paths (import torch.cuda.amp, from torch.cuda import x).
        previous = []
        for tok, line_offset in self._statement_tokens(node):
            if tok.type == tokenize.NAME and tok.string == "cuda" and [t.string for t in previous[-2:]] == ["torch", "."]:
                self.replace_token(tok, line_offset, "mlu")
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                previous.append(tok)

    def _rename_import_name(self, node, old, new):
        after_import = False
        for tok, line_offset in self._statement_tokens(node):
            if tok.type == tokenize.NAME and tok.string == "import":
                after_import = True
            elif after_import and tok.type == tokenize.NAME and tok.string == old:
                self.replace_token(tok, line_offset, new)
                return

    def _segment(self, node):
        if node.lineno != node.end_lineno:
            return None
        return self.lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()

    def _replace_string_body(self, node, old, new):
        # Only plain one-line literals whose source is exactly quote + value + quote (no escapes, no
        # implicit concatenation): anything else is left alone.
        text = self._segment(node)
        if text is None:
            return
        prefix = re.match(r"[rRbBuU]*", text).group(0)
        body = text[len(prefix):]
        for quote in ('"""', "'''", '"', "'"):
            if body.startswith(quote) and body.endswith(quote) and body[len(quote):-len(quote)] == old:
                start = node.col_offset + len(prefix.encode()) + len(quote)
                self.replace((node.lineno, start), (node.lineno, start + len(old)), new)
                return


def _converted_string(value):
    match = _DEVICE_STRING.fullmatch(value)
    if match:
        return "mlu" + (match.group(1) or "")
    if _LEGACY_TYPE_NAME.fullmatch(value):
        return "torch.mlu." + value[len("torch.cuda."):]
    if value == "nccl":
        return "cncl"
    if value in ENV_NAMES:
        return ENV_NAMES[value]
    return None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_torch_name(node):
    return isinstance(node, ast.Name) and node.id == "torch"


def _is_torch_cuda(node):
    return isinstance(node, ast.Attribute) and node.attr == "cuda" and _is_torch_name(node.value)


def _mentions_cuda_sources(call):
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith((".cu", ".cuh"))
               for n in ast.walk(call)) or any(k.arg == "cuda_sources" for k in call.keywords)


def convert_source(source):
    """Returns (converted source, changed lines [(line, before, after)], unconverted [(line, what, why)])."""
    tree = ast.parse(source)
    converter = Converter(source)
    converter.visit(tree)
    lines = converter.lines
    edits_by_line = {}
    for edit in converter.edits:
        line, col, end_line, end_col, text = edit
        assert line == end_line, "edits stay on one line"
        edits_by_line.setdefault(line, set()).add((col, end_col, text))
    changed = []
    for line, edits in sorted(edits_by_line.items()):
        raw = lines[line - 1].encode()  # ast offsets are UTF-8 byte offsets
        for col, end_col, text in sorted(edits, reverse=True):
            raw = raw[:col] + text.encode() + raw[end_col:]
        before, after = lines[line - 1], raw.decode()
        lines[line - 1] = after
        changed.append((line, before.rstrip("\n"), after.rstrip("\n")))
    return "".join(lines), changed, sorted(set(converter.unconverted))


def convert_tree(source_path, output_path):
    """Converts a file or a directory; returns the report's rows (file, changed, unconverted)."""
    results = []
    if os.path.isfile(source_path):
        files = [(source_path, output_path)]
    else:
        if os.path.exists(output_path):
            raise FileExistsError(f"{output_path} exists: remove it or choose another output with -o")
        shutil.copytree(source_path, output_path, symlinks=True)
        files = []
        for root, _, names in os.walk(output_path):
            for name in sorted(names):
                path = os.path.join(root, name)
                if name.endswith(".py"):
                    files.append((os.path.join(source_path, os.path.relpath(path, output_path)), path))
                elif name.endswith((".cu", ".cuh")):
                    rel = os.path.relpath(path, output_path)
                    results.append((rel, [], [(0, rel, "CUDA source file: copied unchanged; port it to mlu")]))
    for src, dst in files:
        with open(src, encoding="utf-8") as f:
            source = f.read()
        rel = os.path.relpath(src, source_path) if os.path.isdir(source_path) else os.path.basename(src)
        try:
            converted, changed, unconverted = convert_source(source)
        except SyntaxError as err:
            converted, changed, unconverted = source, [], [(err.lineno or 0, rel, f"not valid Python ({err.msg}): "
                                                            "copied unchanged")]
        with open(dst, "w", encoding="utf-8") as f:
            f.write(converted)
        if changed or unconverted:
            results.append((rel, changed, unconverted))
    return sorted(results)


def write_report(results, path, source, output):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# torch_mlu_convert report\n\nSource: `{source}`  \nOutput: `{output}`\n\n")
        f.write("## Changed lines\n\n| File | Line | Before | After |\n|---|---|---|---|\n")
        for rel, changed, _ in results:
            for line, before, after in changed:
                f.write(f"| {rel} | {line} | `{_cell(before)}` | `{_cell(after)}` |\n")
        f.write("\n## Not converted (check by hand)\n\n| File | Line | What | Why |\n|---|---|---|---|\n")
        for rel, _, unconverted in results:
            for line, what, why in unconverted:
                f.write(f"| {rel} | {line or ''} | `{_cell(what)}` | {_cell(why)} |\n")


def _cell(text):
    return text.strip().replace("|", "\\|").replace("`", "'")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="torch_mlu_convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("-i", "--input", required=True, help="a Python file or a directory")
    parser.add_argument("-o", "--output", help="where the copy goes (default: <input>_mlu)")
    parser.add_argument("-r", "--report", help="the report's path (default: report.md in the output directory, "
                        "or <output>.report.md for a file)")
    args = parser.parse_args(argv)
    source = os.path.normpath(args.input)
    if not os.path.exists(source):
        parser.error(f"{source} does not exist")
    if os.path.isfile(source):
        stem, ext = os.path.splitext(source)
        output = args.output or f"{stem}_mlu{ext}"
        report = args.report or os.path.splitext(output)[0] + ".report.md"
    else:
        output = args.output or source + "_mlu"
        report = args.report or os.path.join(output, "report.md")
    try:
        results = convert_tree(source, output)
    except FileExistsError as err:
        parser.error(str(err))
    write_report(results, report, source, output)
    n_changed = sum(len(c) for _, c, _ in results)
    n_left = sum(len(u) for _, _, u in results)
    print(f"torch_mlu_convert: {n_changed} line(s) changed, {n_left} item(s) to check by hand; "
          f"output {output}, report {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
