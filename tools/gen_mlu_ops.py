#!/usr/bin/env python3
"""Writes the registrations of the ops csrc/aten/mlu_functions.yaml declares.

Note [Ops as data]
The yaml is the list of aten ops mlu implements, one section per source file. For each entry this
script writes, into one `<file stem>.inc` per section, the C++ wrapper PyTorch's dispatcher calls
and its registration; the source file includes its `.inc` at its end, so the wrappers see the
file's own helpers. Argument lists come from the installed torch's native_functions.yaml (through
torchgen, as gen_sparse_generic_ops.py), so they are typed nowhere by hand.

An entry is one of:

    - structured: upsample_nearest2d        # a structured group, named by its functional op
      impl: launch(self, out)               # the kernel, once the meta function sized the outputs
      native_if: has_kernel(self)           # optional: else the CPU fallback of the same overload
      forms: [functional, out]              # optional: the forms to register (default: all the group has)

    - func: max_pool3d_with_indices         # one op (schema name, "name.overload")
      impl: max_pool3d_mlu                  # returns what the op returns
      native_if: has_pool_kernel(self)

A structured TensorIterator group on one pointwise kernel names it instead of an impl:

    - structured: round.decimals
      pointwise: Op::RoundDecimals          # the PointwiseOp (an expression over the arguments)
      params: make_params({decimals})       # optional: its OpParams (default {})

(csrc/aten/StructuredPointwise.h: the meta function builds the iterator; a dtype the kernel library
lacks takes the CPU fallback then.)

`impl` is a function name, called with the op's arguments in schema order (for a structured group:
the functional form's arguments, then one `const at::Tensor&` per output, named as the out= form
names them), or a C++ expression over those names. Two values name PyTorch's own device-generic
code, checked to be the one kernel native_functions.yaml gives both the CPU and the CUDA key of the
entry's dispatch key: `impl: shared`, an op's at::native function, and for a structured group
`impl: native`, its meta and impl class (at::native::structured_<kernel>).

Other keys: `native_if`, a C++ bool expression over the argument names; `device_guard: false`;
`key`, the dispatch key when it is not PrivateUse1 (NestedTensorPrivateUse1, SparsePrivateUse1,
SparseCsrPrivateUse1); `symint: true`, the SymInt forms of SymInt parameters for a `func` entry's
impl (`impl: shared` takes the form its kernel has). A section's `defaults` apply to each entry.

The wrappers do what torchgen's wrapper for a device backend does and what the hand-written
registrations did before them: the CPU fallback when `native_if` is false, then a device guard on
the first tensor argument, then for a structured group PyTorch's meta function
(at::meta::structured_<name>) through Structured.h's run_functional / run_inplace / run_out, which
size and check the outputs as PyTorch's own structured wrappers do. PrivateUse1 registrations go
through TORCH_MLU_ATEN_IMPL, so the device checks of csrc/aten/DeviceCheck.h apply as to every
other kernel.

    python tools/gen_mlu_ops.py --out-dir DIR     # write DIR/<stem>.inc for every section
    python tools/gen_mlu_ops.py --list-outputs    # the .inc names (CMake reads them at configure time)
    python tools/gen_mlu_ops.py --ops             # every schema name the yaml registers, by file (JSON)

CMake runs it at build time (the output is build output, not committed); a file is rewritten only
when its content changes, so editing one section recompiles one source file.
"""
import argparse
import json
import pathlib
import sys

import yaml
from torchgen.model import DispatchKey

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS_YAML = ROOT / "csrc" / "aten" / "mlu_functions.yaml"
FORMS = ("functional", "inplace", "out")
# The dispatch keys a section may register for, and the CPU and CUDA keys whose shared kernel `impl: shared`
# names.
SHARED_WITH = {
    "PrivateUse1": ("CPU", "CUDA"),
    "NestedTensorPrivateUse1": ("NestedTensorCPU", "NestedTensorCUDA"),
    "SparsePrivateUse1": ("SparseCPU", "SparseCUDA"),
    "SparseCsrPrivateUse1": ("SparseCsrCPU", "SparseCsrCUDA"),
}
ENTRY_KEYS = {"structured", "func", "impl", "native_if", "forms", "device_guard", "key", "symint", "pointwise",
              "params"}


class YamlError(Exception):
    pass


def load_sections(path=OPS_YAML):
    sections = yaml.safe_load(path.read_text())
    if not isinstance(sections, list):
        raise YamlError(f"{path}: expected a list of sections")
    files = [section.get("file") for section in sections]
    if len(set(files)) != len(files):
        raise YamlError(f"{path}: a file has two sections")
    for section in sections:
        if not {"file", "ops"} <= set(section) <= {"file", "ops", "defaults"}:
            raise YamlError(f"{path}: a section has the keys file, ops and defaults, not {sorted(section)}")
        section["ops"] = [{"key": "PrivateUse1", **section.get("defaults", {}), **entry} for entry in section["ops"]]
        if not (path.parents[2] / section["file"]).is_file():
            raise YamlError(f"{path}: {section['file']} does not exist")
        for entry in section["ops"]:
            unknown = set(entry) - ENTRY_KEYS
            kernel_keys = [k for k in ("impl", "pointwise") if k in entry]
            if unknown or ("structured" in entry) == ("func" in entry) or len(kernel_keys) != 1 or \
                    ("pointwise" in entry and "structured" not in entry):
                raise YamlError(f"{path}: entry {entry}: needs exactly one of structured/func, and one of impl "
                                f"and pointwise (a structured group's) (unknown keys: {sorted(unknown)})")
            if entry["key"] not in SHARED_WITH:
                raise YamlError(f"{path}: entry {entry}: key {entry['key']} is not one of {sorted(SHARED_WITH)}")
    return sections


def stem(section):
    return pathlib.Path(section["file"]).stem


# ---------------------------------------------------------------------------------------------------
# The native functions, from the installed torch.

class Native:
    def __init__(self):
        import torchgen
        from torchgen.gen import get_grouped_native_functions, parse_native_yaml
        from torchgen.model import NativeFunctionsGroup

        native = pathlib.Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
        parsed = parse_native_yaml(str(native / "native_functions.yaml"), str(native / "tags.yaml"))
        self.functions = {str(f.func.name): f for f in parsed.native_functions}
        self.indices = parsed.backend_indices
        self.groups = {str(g.functional.func.name): g
                       for g in get_grouped_native_functions(parsed.native_functions)
                       if isinstance(g, NativeFunctionsGroup)}
        self.key = "PrivateUse1"  # the key of the entry being rendered

    def shared_kernel(self, f):
        """The kernel native_functions.yaml names for both the CPU and the CUDA key of self.key, or None."""
        cpu_key, cuda_key = (getattr(DispatchKey, k) for k in SHARED_WITH[self.key])
        cpu, cuda = self.indices[cpu_key].get_kernel(f), self.indices[cuda_key].get_kernel(f)
        return cpu if cpu is not None and cuda is not None and cpu.kernel == cuda.kernel else None

    def function(self, name):
        if name not in self.functions:
            raise YamlError(f"{name}: no such op in native_functions.yaml")
        return self.functions[name]

    def group(self, name):
        g = self.groups.get(name)
        if g is None or not g.structured:
            raise YamlError(f"{name}: not the functional op of a structured group")
        return g


def signature(f, symint=False):
    """(return type, [(type, name)]) of a native function's unboxed C++ signature (SymInt forms with symint)."""
    from torchgen import local
    from torchgen.api.types import NativeSignature

    with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                           use_ilistref_for_tensor_lists=f.part_of_structured_group):
        sig = NativeSignature(f.func, symint=symint)
        return sig.returns_type().cpp_type(), [(b.type, b.name) for b in sig.arguments()]


def op_struct(f):
    return f"at::_ops::{f.func.name.unambiguous_name()}"


def op_header(f):
    return f"<ATen/ops/{f.root_name}_ops.h>"


def is_tensor(cpp_type):
    return cpp_type.replace(" ", "") in ("constat::Tensor&", "at::Tensor&")


# ---------------------------------------------------------------------------------------------------
# C++ for one entry.

def call(impl, names):
    """`impl` as a statement-ready expression: a bare name is called with `names`."""
    return impl if "(" in impl else f"{impl}({', '.join(names)})"


def wrapper_name(key, f):
    return f"wrapper_{key}_{f.func.name.unambiguous_name()}"


def guard_lines(entry, args):
    if entry.get("device_guard", True) is False:
        return []
    tensors = [name for cpp_type, name in args if is_tensor(cpp_type)]
    if not tensors:
        raise YamlError(f"{entry}: no tensor argument to guard on (say device_guard: false)")
    return [f"  c10::OptionalDeviceGuard guard(at::device_of({tensors[0]}));"]


def fallback_lines(entry, f, args):
    if "native_if" not in entry:
        return []
    names = ", ".join(name for _, name in args)
    fallback = "cpu_fallback_symint" if entry.get("symint") else "cpu_fallback"
    return [f"  if (!({entry['native_if']})) return {fallback}<{op_struct(f)}>({names});"]


def plain_wrapper(entry, f, native):
    if entry["impl"] == "shared":
        kernel = native.shared_kernel(f)
        if kernel is None:
            raise YamlError(f"{f.func.name}: impl: shared, but the CPU and CUDA keys of {native.key} share no kernel")
        entry = {**entry, "impl": f"at::native::{kernel.kernel}", "symint": kernel.supports_symint()}
    returns, args = signature(f, entry.get("symint", False))
    names = [name for _, name in args]
    body = fallback_lines(entry, f, args) + guard_lines(entry, args)
    body.append(f"  return {call(entry['impl'], names)};")
    return wrapper(entry["key"], returns, f, args, body)


def shared_structured_class(g, native):
    """at::native::structured_<kernel> of a group whose CPU and CUDA impls are one device-generic kernel."""
    kernel = native.shared_kernel(g.out)
    if kernel is None or not kernel.structured:
        raise YamlError(f"{g.functional.func.name}: impl: native needs one structured kernel for CPU and CUDA")
    if g.out.precomputed:
        raise YamlError(f"{g.functional.func.name}: impl: native with precomputed meta values is not supported")
    return f"at::native::structured_{kernel.kernel}"


def native_impl_lines(cls, form, inputs, outputs, out_names):
    """The body of a structured wrapper running PyTorch's own meta and impl (Structured.h's MLU* classes)."""
    n = len(outputs)
    if form == "functional":
        lines = [f"  MLUFunctional<{cls}, {n}> op;", f"  op.meta({', '.join(inputs)});",
                 f"  op.impl({', '.join(inputs + [f'op.output({i})' for i in range(n)])});"]
        results = [f"std::move(op.output({i}))" for i in range(n)]
        return lines + [f"  return {results[0]};" if n == 1 else f"  return std::make_tuple({', '.join(results)});"]
    if form == "out":
        lines = [f"  MLUOut<{cls}, {n}> op({', '.join(out_names)});", f"  op.meta({', '.join(inputs)});",
                 f"  op.impl({', '.join(inputs + [f'op.maybe_get_output({i})' for i in range(n)])});",
                 "  op.finish();"]
        return lines + [f"  return {out_names[0]};" if n == 1 else
                        f"  return std::forward_as_tuple({', '.join(out_names)});"]
    raise YamlError(f"{cls}: impl: native registers the functional and out= forms only")


def pointwise_lines(entry, f, form, meta_class, inputs, args):
    """A structured TensorIterator op on one pointwise kernel (csrc/aten/StructuredPointwise.h)."""
    names = ", ".join(name for _, name in args)
    returns = "at::Tensor" if form == "functional" else "at::Tensor&"
    fallback = f"[&]() -> {returns} {{ return cpu_fallback<{op_struct(f)}>({names}); }}"
    head = f"{entry['pointwise']}, {entry.get('params', '{}')}, {fallback}"
    if form == "out":
        return [f"  return pointwise_out<{meta_class}>({head}, {args[-1][1]}, {', '.join(inputs)});"]
    return [f"  return pointwise_{form}<{meta_class}>({head}, {', '.join(inputs)});"]


def structured_wrapper(entry, g, form, native):
    from torchgen.api import meta

    f = getattr(g, form)
    returns, args = signature(f)
    _, functional_args = signature(g.functional)
    inputs = [name for _, name in functional_args]
    outputs = [a.name for a in g.out.func.arguments.out]
    n = len(outputs)
    meta_class = f"at::meta::structured_{meta.name(g)}"
    if "pointwise" in entry:  # the helpers choose the device, and the fallback after the meta function
        return wrapper(entry["key"], returns, f, args, pointwise_lines(entry, f, form, meta_class, inputs, args))
    params = ", ".join(f"const at::Tensor& {name}" for name in outputs)
    launch = f"[&]({params}) {{ {call(entry['impl'], inputs + outputs)}; }}"
    body = fallback_lines(entry, f, args) + guard_lines(entry, args)
    arg_list = ", ".join(inputs)
    if entry["impl"] == "native":
        out_names = [name for _, name in args[len(args) - n:]]
        cls = shared_structured_class(g, native)
        return wrapper(entry["key"], returns, f, args, body + native_impl_lines(cls, form, inputs, outputs, out_names))
    if form == "functional":
        body.append(f"  return run_functional<{meta_class}, {n}>({launch}, {arg_list});")
    elif form == "inplace":
        body.append(f"  run_inplace<{meta_class}, {n}>({launch}, {inputs[0]}, {arg_list});")
        body.append(f"  return {inputs[0]};")
    else:
        out_names = [name for _, name in args[len(args) - n:]]
        body.append(f"  run_out<{meta_class}, {n}>({launch}, std::forward_as_tuple({', '.join(out_names)}), "
                    f"{arg_list});")
        body.append(f"  return {out_names[0]};" if n == 1 else
                    f"  return std::forward_as_tuple({', '.join(out_names)});")
    return wrapper(entry["key"], returns, f, args, body)


def wrapper(key, returns, f, args, body):
    params = ", ".join(f"{cpp_type} {name}" for cpp_type, name in args)
    return "\n".join([f"{returns} {wrapper_name(key, f)}({params}) {{", *body, "}"])


def entry_functions(entry, native):
    """[(native function, C++ wrapper)] an entry registers."""
    native.key = entry["key"]
    if "func" in entry:
        f = native.function(entry["func"])
        return [(f, plain_wrapper(entry, f, native))]
    g = native.group(entry["structured"])
    forms = entry.get("forms", [form for form in FORMS if getattr(g, form) is not None])
    for form in forms:
        if form not in FORMS or getattr(g, form) is None:
            raise YamlError(f"{entry['structured']}: the group has no {form} form")
    return [(getattr(g, form), structured_wrapper(entry, g, form, native)) for form in forms]


def render_section(section, native):
    functions = [(entry["key"], *item) for entry in section["ops"] for item in entry_functions(entry, native)]
    headers = sorted({op_header(f) for _, f, _ in functions} |
                     {f"<ATen/ops/{f.root_name}_meta.h>" for _, f, _ in functions if f.part_of_structured_group})
    lines = [f"// Generated by tools/gen_mlu_ops.py from csrc/aten/mlu_functions.yaml (section {section['file']}).",
             "// Do not edit: change the yaml. Included at the end of the section's source file.",
             "#include <ATen/DeviceGuard.h>"]
    lines += [f"#include {h}" for h in headers]
    lines += ['#include "csrc/aten/DeviceCheck.h"', '#include "csrc/aten/Fallback.h"',
              '#include "csrc/aten/Structured.h"', '#include "csrc/aten/StructuredPointwise.h"', "",
              "namespace torch_mlu {", "namespace {", ""]
    for _, _, text in functions:
        lines += [text, ""]
    lines += ["}  // namespace", ""]
    for key in sorted({key for key, _, _ in functions}, key=lambda k: k != "PrivateUse1"):
        # PrivateUse1: through MLULibrary, which adds CUDA's device checks (csrc/aten/DeviceCheck.h).
        lines.append("TORCH_MLU_ATEN_IMPL(m) {" if key == "PrivateUse1" else f"TORCH_LIBRARY_IMPL(aten, {key}, m) {{")
        lines += [f'  m.impl("{f.func.name}", TORCH_FN({wrapper_name(k, f)}));' for k, f, _ in functions if k == key]
        lines += ["}", ""]
    lines += ["}  // namespace torch_mlu", ""]
    return "\n".join(lines)


def registered_ops(sections, native):
    """{file: [schema names]}: what each section registers."""
    result = {}
    for section in sections:
        per_key = result.setdefault(section["file"], {})
        for entry in section["ops"]:
            per_key.setdefault(entry["key"], []).extend(str(f.func.name) for f, _ in entry_functions(entry, native))
    return result


def write_if_changed(path, text):
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=pathlib.Path)
    parser.add_argument("--list-outputs", action="store_true")
    parser.add_argument("--ops", action="store_true")
    args = parser.parse_args()
    try:
        sections = load_sections()
        if args.list_outputs:
            print(";".join(f"{stem(s)}.inc" for s in sections))
            return 0
        native = Native()
        if args.ops:
            print(json.dumps(registered_ops(sections, native), indent=1))
            return 0
        if args.out_dir is None:
            parser.error("give --out-dir, --list-outputs or --ops")
        for section in sections:
            write_if_changed(args.out_dir / f"{stem(section)}.inc", render_section(section, native))
    except YamlError as error:
        print(f"gen_mlu_ops.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
