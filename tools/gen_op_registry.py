#!/usr/bin/env python3
"""Writes docs/op_registry.md: which source file registers which op for mlu.

What is registered comes from the built library, at run time: a fresh interpreter imports torch
with backend autoload off, lists the dispatcher's registrations for every PrivateUse1 dispatch key
(PrivateUse1, AutocastPrivateUse1, AutogradPrivateUse1, ...), imports torch_mlu and lists them
again; the difference (new entries, or entries whose registration site changed) is what torch_mlu
registers. torch's own PrivateUse1 kernels (the c10d collectives) are thereby left out.

Where each op is registered comes from a scan of csrc/: every `.impl(NAME, ...)` call, after
expanding the macros that csrc's headers and the file itself define (ForeachOps.cpp's
MLU_REGISTER_BINARY, a file's local helpers), with its dispatch key taken from the enclosing
TORCH_MLU_ATEN_IMPL / TORCH_LIBRARY_IMPL block, and the entries of csrc/aten/mlu_functions.yaml,
placed in their section's file. NAME is a schema name ("add.Tensor", "aten::add.Tensor") or an
at::_ops identifier (`add__Tensor` in schema_name<ATEN_OP(add__Tensor)>()), which the dispatcher's
own op list turns into its schema name ("add_.Tensor"), so no underscore guessing is involved.
An op the scan cannot name (the AutocastPrivateUse1 lists expanded from PyTorch's headers) is
placed by the registration site the dispatcher recorded (its file name), else by the one block of
its dispatch key, else listed as unattributed. Registrations the scan finds but the library lacks
are reported on stderr (a build older than the sources).

    python tools/gen_op_registry.py           # rewrite docs/op_registry.md
    python tools/gen_op_registry.py --check   # exit 1 if it is stale (tests/test_op_registry.py)

It imports the torch_mlu that `python -c "import torch_mlu"` finds from the repository root
(with -P, the one on PYTHONPATH / installed instead): build first.
"""
import argparse
import collections
import difflib
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "op_registry.md"
SCAN_DIR = "csrc"
SOURCE_SUFFIXES = (".cpp", ".h", ".inc")

# Block macros: kept unexpanded, they open a registration block. TORCH_MLU_ATEN_IMPL expands into a
# TORCH_LIBRARY_IMPL whose body is a separate function, so its key is taken from the macro itself.
ATEN_IMPL_MACROS = {"TORCH_MLU_ATEN_IMPL", "TORCH_MLU_ATEN_IMPL_UID", "TORCH_MLU_ATEN_IMPL_UID2"}

# ---------------------------------------------------------------------------------------------------
# The run-time half: what the built library registers.

RUNTIME_QUERY = r"""
import json, re, sys
import torch

KEYS = sorted(k for k in torch._C.DispatchKey.__members__ if "PrivateUse1" in k)
SITE = re.compile(r"^(\w+): registered at (\S+?)(?::\d+)?(?:\s|$)")

def snapshot():
    entries = {}
    for key in KEYS:
        for op in torch._C._dispatch_get_registrations_for_dispatch_key(key):
            site = None
            for line in torch._C._dispatch_dump(op).splitlines():
                m = SITE.match(line)
                if m and m.group(1) == key:
                    site = m.group(2)
                    break
            entries[key + " " + op] = site
    return entries

before = snapshot()
import torch_mlu
after = snapshot()
ours = {k: v for k, v in after.items() if k not in before or before[k] != v}
print(json.dumps({
    "torch": torch.__version__,
    "torch_mlu": torch_mlu.__file__,
    "keys": KEYS,
    "registrations": [[k.split(" ", 1)[0], k.split(" ", 1)[1], v] for k, v in sorted(ours.items())],
    "all_ops": sorted(torch._C._dispatch_get_all_op_names()),
}))
"""


def query_runtime():
    """The registrations torch_mlu adds, from a fresh interpreter: a dict (see RUNTIME_QUERY)."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    command = [sys.executable] + (["-P"] if sys.flags.safe_path else []) + ["-c", RUNTIME_QUERY]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    if result.returncode != 0:
        sys.exit("gen_op_registry: could not import torch_mlu to list its registrations (build it first):\n"
                 + result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def unambiguous_names(all_ops):
    """{at::_ops identifier: "ns::name.overload"} for the aten ops, as torchgen spells the identifiers
    (name, then "_" and the overload if there is one: add__Tensor is add_.Tensor)."""
    table = {}
    for op in all_ops:
        ns, _, full = op.partition("::")
        if ns != "aten":
            continue
        name, _, overload = full.partition(".")
        table[f"{name}_{overload}" if overload else name] = op
    return table


# ---------------------------------------------------------------------------------------------------
# The static half: a small C preprocessor, enough for the registration macros.

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<str>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*")
  | (?P<chr>(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<punct>\#\#|::|->|\.\.\.|[^\sA-Za-z_0-9])
""", re.VERBOSE)


class Tok:
    __slots__ = ("text", "kind", "space", "hide")

    def __init__(self, text, kind, space=False, hide=frozenset()):
        self.text, self.kind, self.space, self.hide = text, kind, space, hide

    def __repr__(self):
        return self.text


def tokenize(text):
    tokens, space = [], False
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "ws":
            space = True
            continue
        tokens.append(Tok(m.group(), kind, space))
        space = False
    return tokens


def strip_comments(text):
    """text without comments (a comment becomes a space; newlines inside block comments are kept)."""
    out, i, n = [], 0, len(text)
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
    for m in pattern.finditer(text):
        out.append(text[i:m.start()])
        s = m.group()
        if s.startswith("//"):
            out.append(" ")
        elif s.startswith("/*"):
            out.append(" " + "\n" * s.count("\n"))
        else:
            out.append(s)
        i = m.end()
    out.append(text[i:n])
    return "".join(out)


def logical_lines(text):
    """(first line number, text) of each line after joining backslash continuations and dropping comments."""
    lines = strip_comments(text).split("\n")
    result, i = [], 0
    while i < len(lines):
        start, line = i + 1, lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        result.append((start, line))
        i += 1
    return result


class Macro:
    def __init__(self, params, variadic, body):
        self.params, self.variadic, self.body = params, variadic, body  # params None: object-like


DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$")
UNDEF = re.compile(r"^\s*#\s*undef\s+([A-Za-z_]\w*)")


def apply_directive(line, macros):
    """Applies a #define / #undef line to macros; other directives are ignored."""
    m = DEFINE.match(line)
    if m:
        name, has_params, params, body = m.group(1), m.group(2), m.group(3), m.group(4)
        if name in ATEN_IMPL_MACROS:
            return
        if has_params is None:
            macros[name] = Macro(None, False, tokenize(body))
            return
        names = [p.strip() for p in params.split(",") if p.strip()]
        variadic = bool(names) and names[-1] == "..."
        if variadic:
            names[-1] = "__VA_ARGS__"
        macros[name] = Macro(names, variadic, tokenize(body))
        return
    m = UNDEF.match(line)
    if m:
        macros.pop(m.group(1), None)


def stringize(tokens):
    text = "".join((" " if t.space and i else "") + t.text for i, t in enumerate(tokens))
    return Tok('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"', "str")


def paste(left, right):
    if left is None:
        return list(right)
    if not right:
        return [left]
    joined = tokenize(left.text + right[0].text)
    if joined:
        joined[0].space = left.space
    return joined + list(right[1:])


def substitute(macro, args, hide, macros):
    """The macro's body with its arguments in, before rescanning (C11 6.10.3.1-3, simplified)."""
    bindings = {}
    if macro.params:
        named = macro.params[:-1] if macro.variadic else macro.params
        for k, name in enumerate(named):
            bindings[name] = args[k] if k < len(args) else []
        if macro.variadic:
            rest = args[len(named):]
            va = []
            for k, arg in enumerate(rest):
                if k:
                    va.append(Tok(",", "punct"))
                va.extend(arg)
            bindings["__VA_ARGS__"] = va
    expanded_args = {}

    def expanded(name):
        if name not in expanded_args:
            expanded_args[name] = expand(bindings[name], macros)
        return expanded_args[name]

    body, out, i = macro.body, [], 0
    while i < len(body):
        t = body[i]
        nxt = body[i + 1] if i + 1 < len(body) else None
        if t.text == "#" and nxt is not None and nxt.text in bindings:
            out.append(stringize(bindings[nxt.text]))
            i += 2
            continue
        if t.text == "__VA_OPT__" and nxt is not None and nxt.text == "(":
            depth, j = 0, i + 1
            while j < len(body):
                depth += {"(": 1, ")": -1}.get(body[j].text, 0)
                if depth == 0:
                    break
                j += 1
            if bindings.get("__VA_ARGS__"):
                out.extend(substitute(Macro(macro.params, macro.variadic, body[i + 2:j]), args, hide, macros))
            i = j + 1
            continue
        if t.text == "##" and i + 1 < len(body):
            right_tok = body[i + 1]
            right = bindings[right_tok.text] if right_tok.text in bindings else [right_tok]
            left = out.pop() if out else None
            out.extend(paste(left, right))
            i += 2
            continue
        if t.kind == "id" and t.text in bindings:
            operand_of_paste = nxt is not None and nxt.text == "##"
            out.extend(bindings[t.text] if operand_of_paste else expanded(t.text))
            i += 1
            continue
        out.append(Tok(t.text, t.kind, t.space))
        i += 1
    for t in out:
        t.hide = t.hide | hide
    return out


def expand(tokens, macros):
    """tokens with every macro invocation of `macros` expanded (hide sets stop recursion)."""
    out, stack = [], [Tok(t.text, t.kind, t.space, t.hide) for t in reversed(tokens)]
    while stack:
        t = stack.pop()
        macro = macros.get(t.text) if t.kind == "id" else None
        if macro is None or t.text in t.hide:
            out.append(t)
            continue
        if macro.params is None:
            stack.extend(reversed(substitute(macro, [], t.hide | {t.text}, macros)))
            continue
        if not stack or stack[-1].text != "(":
            out.append(t)
            continue
        stack.pop()
        depth, args, close = 1, [[]], None
        while stack:
            a = stack.pop()
            if a.text == "(":
                depth += 1
            elif a.text == ")":
                depth -= 1
                if depth == 0:
                    close = a
                    break
            elif a.text == "," and depth == 1:
                args.append([])
                continue
            args[-1].append(a)
        if args == [[]] and not macro.params:
            args = []
        hide = (t.hide & close.hide if close is not None else t.hide) | {t.text}
        stack.extend(reversed(substitute(macro, args, hide, macros)))
    return out


def header_macros(files):
    """The macros csrc's headers define (in path order; each header's own #undefs applied)."""
    macros = {}
    for path in files:
        if path.suffix == ".h":
            for _, line in logical_lines(path.read_text(encoding="utf-8")):
                if line.lstrip().startswith("#"):
                    apply_directive(line, macros)
    return macros


def expanded_code(text, macros):
    """The file's code (directives applied in order, not kept) as one expanded token list."""
    macros = dict(macros)
    tokens, chunk = [], []
    for _, line in logical_lines(text):
        if line.lstrip().startswith("#"):
            tokens.extend(expand(tokenize("\n".join(chunk)), macros))
            chunk = []
            apply_directive(line, macros)
        else:
            chunk.append(line)
    tokens.extend(expand(tokenize("\n".join(chunk)), macros))
    return tokens


def call_args(tokens, open_index):
    """The top-level arguments (token lists) of the call whose "(" is tokens[open_index], and the index after ")"."""
    depth, args, i = 0, [[]], open_index
    while i < len(tokens):
        t = tokens[i].text
        if t in "([{" and len(t) == 1:
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif t in ")]}" and len(t) == 1:
            depth -= 1
            if depth == 0:
                return args, i + 1
        elif t == "," and depth == 1:
            args.append([])
            i += 1
            continue
        args[-1].append(tokens[i])
        i += 1
    return args, i


def string_value(tokens):
    """The value of a run of (adjacent, concatenated) string literals, else None."""
    if not tokens or any(t.kind != "str" for t in tokens):
        return None
    return "".join(re.sub(r'^(?:u8|[uUL])?"|"$', "", t.text) for t in tokens)


def op_name(arg, namespace):
    """("ns::name.overload" or None, at::_ops identifier or None) named by the first argument of .impl()."""
    text = string_value(arg)
    if text is None and len(arg) >= 4 and arg[0].text == "TORCH_SELECTIVE_NAME":
        text = string_value(arg[2:-1])
    if text is not None:
        return (text if "::" in text else f"{namespace}::{text}"), None
    for k in range(len(arg) - 2):
        if arg[k].text == "_ops" and arg[k + 1].text == "::" and arg[k + 2].kind == "id":
            return None, arg[k + 2].text
    return None, None


class FileScan:
    def __init__(self):
        self.impls = []          # (key or None, qualified name or None, at::_ops identifier or None, raw text)
        self.blocks = set()      # (namespace, key) of the registration blocks
        self.fallbacks = set()   # (namespace, key, fallthrough) of each m.fallback(...)
        self.defs = []           # schemas defined (TORCH_LIBRARY)
        self.stubs = []          # REGISTER_PRIVATEUSE1_DISPATCH stubs
        self.declared = []       # its entries in csrc/aten/mlu_functions.yaml: {ops, native_if}


def scan_tokens(tokens):
    scan = FileScan()
    depth, blocks = 0, []  # blocks: (depth at its "{", namespace, key)
    i = 0
    while i < len(tokens):
        t = tokens[i]
        text = t.text
        if text == "{":
            depth += 1
        elif text == "}":
            depth -= 1
            while blocks and blocks[-1][0] > depth:
                blocks.pop()
        elif t.kind == "id" and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            opener = None
            if text == "TORCH_MLU_ATEN_IMPL":
                opener = ("aten", "PrivateUse1")
            elif text in ("TORCH_LIBRARY_IMPL", "TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT"):
                args, _ = call_args(tokens, i + 1)
                ns = args[0][0].text if args and args[0] else "?"
                opener = (ns, args[1][0].text if text == "TORCH_LIBRARY_IMPL" and len(args) > 1 and args[1]
                          else "def")
            elif text == "REGISTER_PRIVATEUSE1_DISPATCH":
                args, _ = call_args(tokens, i + 1)
                if args and args[0]:
                    scan.stubs.append(args[0][0].text)
            if opener is not None:
                _, end = call_args(tokens, i + 1)
                if end < len(tokens) and tokens[end].text == "{":
                    scan.blocks.add(opener)
                    blocks.append((depth + 1, *opener))
                i = end
                continue
        elif text == "." and i + 2 < len(tokens) and tokens[i + 2].text == "(" and \
                tokens[i + 1].text in ("impl", "fallback", "def"):
            what = tokens[i + 1].text
            args, end = call_args(tokens, i + 2)
            ns, key = (blocks[-1][1], blocks[-1][2]) if blocks else ("aten", None)
            if what == "impl" and not blocks:
                pass  # a method named impl outside any registration block (a structured kernel's)
            elif what == "impl":
                name, ident = op_name(args[0] if args else [], ns)
                raw = " ".join(x.text for x in (args[0] if args else []))
                scan.impls.append((key, name, ident, raw))
            elif what == "fallback" and key is not None:
                scan.fallbacks.add((ns, key, any(t.text == "makeFallthrough" for arg in args for t in arg)))
            elif what == "def" and args:
                schema = string_value(args[0])
                if schema:
                    scan.defs.append(f"{ns}::{re.split(r'[(]', schema, maxsplit=1)[0].strip()}")
            i = end
            continue
        i += 1
    return scan


def scan_sources(root):
    files = sorted(p for p in (root / SCAN_DIR).rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
    macros = header_macros(files)
    scans = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not re.search(r"\.\s*(impl|fallback)\s*\(|REGISTER_PRIVATEUSE1_DISPATCH|TORCH_LIBRARY", text):
            continue
        scan = scan_tokens(expanded_code(text, macros))
        if path.suffix == ".h" and not scan.blocks:
            continue  # a header that only defines registration macros (expanded where they are used)
        if scan.impls or scan.blocks or scan.stubs:
            scans[path.relative_to(root).as_posix()] = scan
    for rel, entries in declared_ops(root).items():  # registered by the generated .inc the file includes
        scan = scans.setdefault(rel, FileScan())
        scan.impls += [(entry["key"], f"aten::{name}", None, name) for entry in entries for name in entry["ops"]]
        scan.declared += entries
    return scans


def declared_ops(root):
    """{file: [{key, ops, native_if}]}: the entries of root's csrc/aten/mlu_functions.yaml (tools/gen_mlu_ops.py)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_mlu_ops

    path = root / gen_mlu_ops.OPS_YAML.relative_to(ROOT)
    if not path.is_file():
        return {}
    native = gen_mlu_ops.Native()
    declared = collections.defaultdict(list)
    for section in gen_mlu_ops.load_sections(path):
        declared[section["file"]] += [{"key": entry["key"], "native_if": entry.get("native_if"),
                                       "ops": [str(f.func.name) for f, _ in gen_mlu_ops.entry_functions(entry, native)]}
                                      for entry in section["ops"]]
    return declared


# ---------------------------------------------------------------------------------------------------
# Putting the halves together.

def attribute(runtime, scans, root):
    """({file: {key: set(ops)}}, {file: how many placed by registration site}, unattributed, warnings)."""
    schema_of = unambiguous_names(runtime["all_ops"])
    known = set(runtime["all_ops"])
    by_name = collections.defaultdict(set)  # (key or None, op) -> files
    warnings = []
    for rel, scan in scans.items():
        for key, name, ident, raw in scan.impls:
            if name is None and ident is not None:
                name = schema_of.get(ident)
                if name is None:
                    warnings.append(f"{rel}: at::_ops::{ident} names no op of this torch")
                    continue
            if name is None:
                warnings.append(f"{rel}: .impl({raw}, ...) names its op at run time; not scanned")
                continue
            if name not in known:
                warnings.append(f"{rel}: registers {name}, which this torch does not define")
            by_name[(key, name)].add(rel)

    sources_by_basename = collections.defaultdict(list)
    for p in sorted((root / SCAN_DIR).rglob("*")):
        if p.suffix in SOURCE_SUFFIXES:
            sources_by_basename[p.name].append(p.relative_to(root).as_posix())
    blocks_of = collections.defaultdict(list)
    for rel, scan in scans.items():
        for ns, key in scan.blocks:
            blocks_of[(ns, key)].append(rel)

    registry = collections.defaultdict(lambda: collections.defaultdict(set))
    by_site = collections.Counter()
    unattributed = []
    registered = set()
    for key, op, site in runtime["registrations"]:
        registered.add((key, op))
        files = by_name.get((key, op)) or by_name.get((None, op))
        if files:
            if len(files) > 1:
                warnings.append(f"{key} {op} is registered in {len(files)} files: {', '.join(sorted(files))}")
            for rel in files:
                registry[rel][key].add(op)
            continue
        placed = None
        if site:  # the file the dispatcher recorded, in this tree, or the one source file of that name
            candidate = short_site(site)
            same_name = sources_by_basename.get(candidate.rsplit("/", 1)[-1], [])
            if "/" in candidate and (root / candidate).is_file():
                placed = candidate
            elif len(same_name) == 1:
                placed = same_name[0]
        if placed is None and len(blocks_of.get((op.split("::")[0], key), [])) == 1:
            placed = blocks_of[(op.split("::")[0], key)][0]
        if placed is None:
            unattributed.append((key, op, short_site(site)))
            continue
        registry[placed][key].add(op)
        by_site[placed] += 1
    for (key, op), files in sorted(by_name.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        if key is not None and key not in runtime["keys"]:
            continue  # Conjugate, Negative, ...: not a PrivateUse1 key
        if not any((k, op) in registered for k in ([key] if key else runtime["keys"])):
            warnings.append(f"{', '.join(sorted(files))}: registers {op} for {key or 'mlu'}, "
                            "which the built library lacks (rebuild?)")
    return registry, by_site, unattributed, warnings


def short_site(site):
    """A registration site without the build machine's directories: from csrc/ or torch_mlu/ on, else the file name."""
    if not site:
        return "an unknown site"
    site = site.replace("\\", "/")
    for top in (SCAN_DIR + "/", "torch_mlu/"):
        if "/" + top in "/" + site:
            return top + ("/" + site).split("/" + top, 1)[1]
    return site.rsplit("/", 1)[-1]


def short(op):
    return op[len("aten::"):] if op.startswith("aten::") else op


def family(op):
    """The op's base name, grouping add.Tensor, add_.Tensor and add.out under `add`."""
    name = short(op).split(".", 1)[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def render(runtime, scans, registry, by_site, unattributed):
    keys = [k for k in runtime["keys"] if any(k in per_key for per_key in registry.values())
            or any(k == u[0] for u in unattributed)]
    keys.sort(key=lambda k: (k != "PrivateUse1", k))
    totals = collections.Counter(key for per_key in registry.values() for key, ops in per_key.items()
                                 for _ in ops)
    distinct = collections.Counter(key for key, _, _ in runtime["registrations"])
    out = [
        "# Op registry",
        "",
        "<!-- Generated by tools/gen_op_registry.py. Do not edit: rerun it after adding or moving a",
        "     registration; tests/test_op_registry.py runs it with --check. -->",
        "",
        "What torch_mlu registers with PyTorch's dispatcher, per source file: the ops as the built library",
        "lists them for each PrivateUse1 dispatch key, placed in the file whose section of",
        "csrc/aten/mlu_functions.yaml (or hand-written `m.impl(...)`) registers them. An op without a kernel",
        "here runs through the CPU fallback (Note [CPU fallback] in csrc/aten/Fallback.h). Regenerate with",
        "`python tools/gen_op_registry.py`.",
        "",
        "Totals: " + ", ".join(f"**{distinct[k]}** ops for {k}" for k in keys) + f", in {len(registry)} files"
        + (f"; none for {', '.join(k for k in runtime['keys'] if k not in keys)}." if len(keys) < len(runtime["keys"])
           else "."),
        "",
        "| file | " + " | ".join(keys) + " |",
        "| --- | " + " | ".join("---:" for _ in keys) + " |",
    ]
    for rel in sorted(registry):
        counts = (len(registry[rel].get(k, ())) for k in keys)
        out.append(f"| [{rel}](../{rel}) | " + " | ".join(str(n) if n else "" for n in counts) + " |")
    out.append("| total | " + " | ".join(str(totals[k]) for k in keys) + " |")
    fallbacks = sorted((rel, *entry) for rel, scan in scans.items() for entry in scan.fallbacks)
    stubs = sorted((rel, stub) for rel, scan in scans.items() for stub in scan.stubs)
    other_keys = collections.defaultdict(set)  # (file, key) -> ops, for keys that are not PrivateUse1 keys
    for rel, scan in scans.items():
        for key, name, _, _ in scan.impls:
            if key is not None and key not in runtime["keys"] and name is not None:
                other_keys[(rel, key)].add(short(name))
    if fallbacks or stubs or other_keys:
        out += ["", "Besides the ops:"]
        for rel, ns, key, fallthrough in fallbacks:
            what = "every op" if ns == "_" else f"the {ns} ops"
            kind = "a fallthrough (the op runs on unchanged)" if fallthrough else "a boxed fallback"
            out.append(f"- `{rel}` registers {kind} for {what} on {key} (`m.fallback`).")
        for rel, stub in stubs:
            out.append(f"- `{rel}` fills the DispatchStub `{stub}` (`REGISTER_PRIVATEUSE1_DISPATCH`).")
        for (rel, key), ops in sorted(other_keys.items()):
            out.append(f"- `{rel}` registers " + ", ".join(f"`{o}`" for o in sorted(ops)) + f" for {key}.")
    for rel in sorted(registry):
        out += ["", f"## {rel}"]
        for key in keys:
            ops = registry[rel].get(key)
            if not ops:
                continue
            out += ["", f"{key} ({len(ops)}):", ""]
            families = collections.defaultdict(list)
            for op in ops:
                families[family(op)].append(short(op))
            for name in sorted(families):
                out.append(f"- {name}: " + ", ".join(f"`{o}`" for o in sorted(families[name])))
        declared = scans[rel].declared if rel in scans else []
        if declared:
            out += ["", f"Declared in csrc/aten/mlu_functions.yaml ({len(declared)} entries; the CPU fallback "
                    "serves a call when the condition is false):", ""]
            for entry in declared:
                condition = f" — native if `{entry['native_if']}`" if entry["native_if"] else ""
                key = "" if entry["key"] == "PrivateUse1" else f" ({entry['key']})"
                out.append("- " + ", ".join(f"`{o}`" for o in entry["ops"]) + key + condition)
        if by_site.get(rel):
            out += ["", f"({by_site[rel]} of these come from macros this scan does not see into, such as",
                    "PyTorch's AT_FORALL_* lists: they are placed by the registration site the dispatcher records.)"]
    if unattributed:
        out += ["", "## Not found in the sources", ""]
        out += [f"- {key}: `{short(op)}` (registered at {site})" for key, op, site in sorted(unattributed)]
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file on disk is stale")
    parser.add_argument("--output", type=pathlib.Path, default=OUTPUT, help="default: docs/op_registry.md")
    parser.add_argument("--quiet", action="store_true", help="no warnings on stderr")
    args = parser.parse_args(argv)

    runtime = query_runtime()
    scans = scan_sources(ROOT)
    registry, by_site, unattributed, warnings = attribute(runtime, scans, ROOT)
    if not args.quiet:
        for warning in warnings:
            print(f"gen_op_registry: {warning}", file=sys.stderr)
    text = render(runtime, scans, registry, by_site, unattributed)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current == text:
            return 0
        diff = difflib.unified_diff(current.splitlines(), text.splitlines(), str(args.output), "regenerated",
                                    lineterm="", n=0)
        print(f"{args.output} is stale: run python tools/gen_op_registry.py\n" + "\n".join(list(diff)[:60]),
              file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    counts = collections.Counter(key for key, _, _ in runtime["registrations"])
    print(f"wrote {args.output}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) +
          f" registrations in {len(registry)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
