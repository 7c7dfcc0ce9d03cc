#!/usr/bin/env python3
"""Writes csrc/aten/sparse/SparseGenericOps.cpp: the device-generic sparse kernels mlu reuses.

PyTorch 2.13 registers no kernel for the SparsePrivateUse1 and SparseCsrPrivateUse1 dispatch keys.
Most of its sparse kernels, though, are device-generic code: they only rearrange indices and values
through other ATen ops (sparse `abs` is `abs` of the values; `_to_dense` is `zeros(...).add_(self)`),
and native_functions.yaml names the same function for SparseCPU and SparseCUDA (SparseCsrCPU and
SparseCsrCUDA). This script lists those functions from the installed torch's native_functions.yaml
and registers each for mlu's sparse keys, so they run natively on top of mlu's dense kernels. The
functions whose CPU and CUDA kernels differ (coalesce, sparse x dense products, sparse + dense, ...)
are mlu's own (SparseOps.cpp) or fall back to the CPU (SparseFallback.cpp).

Some "same for CPU and CUDA" functions still reach a DispatchStub or a CPU-only helper inside; they
are listed in EXCLUDED with the reason, and take mlu's own kernel or the fallback instead.

Each kernel is registered through a wrapper that does what torchgen's wrapper for the CUDA key does
(torchgen/dest/register_dispatch_key.py, the backends with device_guard): on the sparse keys, the
device check over the out= and positional tensors (c10::impl::check_and_update_common_device, with
CUDA's message and a wrapper_SparsePrivateUse1_... method name) unless the yaml says NoCheck; then,
unless the yaml says device_guard: False, a device guard: DeviceGuard(device_or_default(device)) for a
kernel that takes TensorOptions (a factory), else OptionalDeviceGuard(device_of(x)) with x the first
tensor among self, out= and the positional arguments. Without the guard, a sparse tensor built while
another mlu device is current gets its placeholder indices and values (SparseTensorImpl's
constructor allocates them on the current device of the device type) on the wrong device. The dense
key's wrappers (the dense-to-sparse conversions) get only the guard: MLULibrary adds their check.

    python tools/gen_sparse_generic_ops.py          # rewrite the file
    python tools/gen_sparse_generic_ops.py --check  # exit 1 if it is stale (tests/test_sparse.py)
"""
import argparse
import pathlib
import sys

import torchgen
from torchgen import local
from torchgen.api.types import DispatcherSignature, NativeSignature
from torchgen.gen import parse_native_yaml
from torchgen.model import DeviceCheckType, DispatchKey, TensorOptionsArguments

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "csrc" / "aten" / "sparse" / "SparseGenericOps.cpp"

# Schema names whose shared CPU/CUDA function is not device-generic on mlu, or that mlu implements.
EXCLUDED = {
    # Reach sparse_mask_intersection_out_stub / the CPU's sparse_mask_helper: SparseOps.cpp.
    "sparse_mask": "mlu's own kernel (SparseOps.cpp)",
    "_sparse_mask_projection": "reaches a DispatchStub with no mlu kernel (falls back)",
    # Pinning is a CPU notion (SparseCPU only); not on the device.
    "is_pinned": "a CPU tensor's property",
    "_pin_memory": "a CPU tensor's property",
}

# Dense-key (PrivateUse1) conversions into sparse layouts: registered for CPU and CUDA under one
# device-generic function (nonzero, index_select and friends).
DENSE_TO_SPARSE = {"_to_sparse", "_to_sparse.sparse_dim", "_to_sparse_csr", "_to_sparse_csc",
                   "_to_sparse_bsr", "_to_sparse_bsc"}

KEYS = [  # (our key, PyTorch's CPU key, PyTorch's CUDA key)
    ("SparsePrivateUse1", DispatchKey.SparseCPU, DispatchKey.SparseCUDA),
    ("SparseCsrPrivateUse1", DispatchKey.SparseCsrCPU, DispatchKey.SparseCsrCUDA),
    ("PrivateUse1", DispatchKey.CPU, DispatchKey.CUDA),
]


def shared_kernels(parsed, cpu_key, cuda_key, only=None):
    cpu, cuda = parsed.backend_indices[cpu_key], parsed.backend_indices[cuda_key]
    for f in parsed.native_functions:
        name = str(f.func.name)
        if only is not None and name not in only:
            continue
        k_cpu, k_cuda = cpu.get_kernel(f), cuda.get_kernel(f)
        if k_cpu is None or k_cuda is None or k_cpu.kernel != k_cuda.kernel or name in EXCLUDED:
            continue
        with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                               use_ilistref_for_tensor_lists=f.part_of_structured_group):
            sig = NativeSignature(f.func, symint=k_cpu.supports_symint())
            ptr = sig.ptr_type()
            defn_args = [b.defn() for b in sig.arguments()]
            call_args = [b.name for b in sig.arguments()]
            returns = sig.returns_type().cpp_type()
        yield name, f, k_cpu.kernel, ptr, returns, defn_args, call_args


def wrapper(key, f, kernel, returns, defn_args, call_args, device_check):
    """A wrapper in the shape of torchgen's for the CUDA key: device check, device guard, kernel."""
    method = DispatcherSignature.from_schema(f.func, prefix=f"wrapper_{key}_{f.func.name.overload_name}_").name()
    body = []
    if device_check and f.device_check != DeviceCheckType.NoCheck:
        body.append("  std::optional<c10::Device> common_device;")
        body.append("  (void)common_device;")
        for a in (*f.func.arguments.out, *f.func.arguments.flat_positional):
            if a.type.is_tensor_like():
                assert a.name in call_args, (str(f.func.name), a.name)
                body.append(f'  c10::impl::check_and_update_common_device(common_device, {a.name}, "{method}", '
                            f'"{a.name}");')
    if f.device_guard:
        if any(isinstance(a, TensorOptionsArguments) for a in f.func.arguments.non_out):
            assert "device" in call_args, str(f.func.name)
            body.append("  const c10::DeviceGuard device_guard(c10::device_or_default(device));")
        else:
            self_arg = [f.func.arguments.self_arg.argument] if f.func.arguments.self_arg is not None else []
            first = next((a for a in (*self_arg, *f.func.arguments.out, *f.func.arguments.flat_positional)
                          if a.type.is_tensor_like()), None)
            if first is not None:
                assert first.name in call_args, (str(f.func.name), first.name)
                assert "?[]" not in str(first.type), str(f.func.name)  # no device_of for a List<optional<Tensor>>
                body.append(f"  const c10::OptionalDeviceGuard device_guard(at::device_of({first.name}));")
    body.append(f"  return at::native::{kernel}({', '.join(call_args)});")
    return method, f"{returns} {method}({', '.join(defn_args)}) {{\n" + "\n".join(body) + "\n}\n"


def render():
    packaged = pathlib.Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
    parsed = parse_native_yaml(str(packaged / "native_functions.yaml"), str(packaged / "tags.yaml"))
    headers, blocks = set(), []
    for key, cpu_key, cuda_key in KEYS:
        only = DENSE_TO_SPARSE if key == "PrivateUse1" else None
        wrappers, lines = [], []
        for name, f, kernel, ptr, returns, defn_args, call_args in shared_kernels(parsed, cpu_key, cuda_key, only):
            headers.add(f"#include <ATen/ops/{f.root_name}_native.h>")
            # The dense key's kernels carry mlu's device check already (MLULibrary, csrc/aten/DeviceCheck.h).
            method, text = wrapper(key, f, kernel, returns, defn_args, call_args, device_check=key != "PrivateUse1")
            wrappers.append(text)
            lines.append(f'  m.impl("{name}", TORCH_FN(static_cast<{ptr}>({method})));')
        opening = "TORCH_MLU_ATEN_IMPL(m)" if key == "PrivateUse1" else f"TORCH_LIBRARY_IMPL(aten, {key}, m)"
        blocks.append("namespace {\n\n" + "\n".join(wrappers) + "\n}  // namespace\n\n" +
                      f"{opening} {{\n" + "\n".join(lines) + "\n}\n")
    excluded = "\n".join(f"//   {name}: {why}" for name, why in sorted(EXCLUDED.items()))
    # clang-format off: the generator's layout is the file's (tools/lint.py formats changed lines).
    return ("// Generated by tools/gen_sparse_generic_ops.py from torch's native_functions.yaml; do not edit.\n"
            "// clang-format off\n"
            "// The sparse kernels PyTorch registers for CPU and CUDA under one device-generic\n"
            "// function, registered for mlu's sparse keys (and the dense-to-sparse conversions for\n"
            "// the dense key), each behind the device check and device guard of CUDA's generated\n"
            "// wrapper (see the generator's docstring). Left out:\n" + excluded + "\n"
            "#include <ATen/DeviceGuard.h>\n#include <ATen/core/op_registration/adaption.h>\n"
            "#include <c10/core/DeviceGuard.h>\n#include <c10/core/TensorOptions.h>\n"
            "#include <torch/library.h>\n\n" + "\n".join(sorted(headers)) +
            '\n\n#include "csrc/aten/DeviceCheck.h"' +
            "\n\nnamespace torch_mlu {\n\n" + "\n".join(blocks) + "\n}  // namespace torch_mlu\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python tools/gen_sparse_generic_ops.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
