"""The kernel library's contract (kernels/src/README.md), checked: one folder per family with files named by
role; every public kernel entry point has a scalar `*_ref` or a stated reason for having none; every family
prints an MLU_KERNELS_VERBOSE line when its kernel runs.

The first two read the source tree only; the third runs a torch script per family on mlu in a subprocess.
"""
import pathlib
import re

from conftest import REPO

KERNELS = pathlib.Path(REPO) / "kernels"
PUBLIC = KERNELS / "include" / "mlu_kernels"
SRC = KERNELS / "src"

# Public headers that are the library's vocabulary, not a family of kernels.
INFRASTRUCTURE = {
    "dtype": "ScalarType and its sizes",
    "half": "the 16-bit float types",
    "float8": "the 8-bit float storage types",
    "layout": "Shape, Strides and their helpers",
    "isa": "the ISA level and its detection",
    "parallel": "the compute-thread pool",
    "philox": "the counter-based generator the random kernels share",
    "verbose": "the MLU_KERNELS_VERBOSE switch",
    "table_math_avx512": "the table-driven AVX-512 float tanh and erf, which mlu's compiled kernels include too",
    "polynomial_tables": "their coefficients (kernels/tools/fit_tables.py)",
}

# Declarations that answer a question or choose a library, not kernels.
QUERY = re.compile(r"_supports$|_available$|_takes$|_library(_name|_available|_takes)?$|^set_|^arity$|_name$")

# Entry points whose reference is named otherwise.
ALIASES = {
    "batch_norm_training_statistics": "batch_norm_statistics_ref",  # the mean and variance; the running
    # statistics' update is a formula on them, checked in kernels/tests/test_norm.cpp
}

# Entry points with no scalar reference, and why.
ALLOWLIST = {
    "nms": "tests/test_box_ops.py compares it with a transcription of torchvision's CPU kernel (exact indices)",
    "roi_align_forward": "tests/test_box_ops.py: a transcription of torchvision's CPU kernel, float32 emulated",
    "roi_align_backward": "tests/test_box_ops.py: autograd through the roi_align_forward transcription",
    "roi_pool_forward": "tests/test_box_ops.py: a transcription of torchvision's CPU kernel (exact values, argmax)",
    "roi_pool_backward": "tests/test_box_ops.py: the reference argmax's gradient scattered by hand",
    "int4_block_n": "a constant of each int4 layout",
    "int4_pack": "int4_unpack's inverse; kernels/tests/test_quantized_gemm.cpp checks hand-made bytes, "
                 "tests/test_quantized_mm.py the CPU's own packing",
    "int4_unpack": "int4_pack's inverse (kernels/tests/test_quantized_gemm.cpp)",
    "int4_pack_tinygemm": "index arithmetic of CUDA's layout; tests/test_quantized_mm.py compares it with a "
                          "transcription of CUDA's packing loop",
    "int4_unpack_tinygemm": "int4_pack_tinygemm's inverse (tests/test_quantized_mm.py)",
    "dyn_quant_int4_gemm": "PyTorch's CPU reference kernel reproduced; tests/test_quantized_mm.py compares it with "
                           "the CPU bit for bit",
    "index_gather": "advanced indexing over TensorIterator's layout; tests/test_native_ops.py compares it with the "
                    "CPU",
    "index_put": "advanced indexing over TensorIterator's layout; tests/test_native_ops.py compares it with the CPU",
    "scatter": "five ops with the CPU's float accumulation and rounding rules; kernels/tests/test_index.cpp states "
               "the expected values, tests/test_native_ops.py compares every mode with the CPU",
    "attention_dropout_keep": "defines the dropout mask (Philox draws) that attention_*_ref take as given",
    "attention_dropout_mask": "defines the dropout mask (Philox draws) that attention_*_ref take as given",
    "attention_forward_varlen": "runs attention_forward per packed sequence; test_attention compares it with "
                                "attention_forward_ref sequence by sequence",
    "attention_backward_varlen": "runs attention_backward per packed sequence (tests/test_varlen_attention.py "
                                 "compares it with the CPU's autograd)",
    "varlen_attention_problem": "a check of offsets, not a computation; test_attention names each problem",
    "conv_transpose_16bit": "the CPU's 16-bit rounding of transposed convolutions, compared with the CPU in "
                            "tests/test_conv.py; its float result is conv_backward_input_ref's",
    "conv_forward_channels_last": "the NCHW reference on the same problem (kernels/tests/test_conv.cpp)",
    "conv_backward_input_channels_last": "the NCHW reference on the same problem (kernels/tests/test_conv.cpp)",
    "conv_backward_weight_channels_last": "the NCHW reference on the same problem (kernels/tests/test_conv.cpp)",
    "unfold": "im2col index arithmetic: the convolutions built on it, and tests/test_patches.py against F.unfold on "
              "the CPU",
    "fold": "col2im index arithmetic: the convolutions built on it, and tests/test_patches.py against F.fold on the "
            "CPU",
    "ctc_loss_forward": "a brute-force sum over every alignment is its oracle (kernels/tests/test_ctc.cpp)",
    "ctc_loss_backward": "the gradient of the brute-force sums is its oracle (kernels/tests/test_ctc.cpp); "
                         "tests/test_ctc_loss.py compares it with the CPU",
    "fft_fill_conjugate_symmetry": "index arithmetic around DFTI; tests/test_fft.py compares transforms with the CPU",
    "adaptive_avg_pool3d": "the CPU's own 3-D summation order is the contract (Note [The CPU's 3-D adaptive "
                           "average]); tests/test_pool.py compares it with the CPU",
    "adaptive_avg_pool3d_backward": "the CPU's own 3-D order; tests/test_pool.py compares it with the CPU",
    "randperm": "a serial Fisher-Yates loop on Philox draws already: the kernel is its own reference",
    "multinomial": "a serial loop over rows on Philox draws already: the kernel is its own reference",
    "arange": "one closed formula per element; kernels/tests/test_sequence_sort_select.cpp checks PyTorch's",
    "arange_int": "one closed formula per element; kernels/tests/test_sequence_sort_select.cpp checks PyTorch's",
    "linspace": "the CPU's own rounding per element (Note [linspace as the CPU rounds]), checked against the CPU",
    "padding_source_index": "a serial loop of index arithmetic: the kernel is its own reference",
    "sort": "the CPU's order of equal keys is the contract (Note [The CPU's order among equal keys]); "
            "tests/test_sort_ties.py",
    "topk": "the CPU's order of equal keys is the contract; tests/test_sort_ties.py compares with the CPU",
    "kth_smallest": "the CPU's quickselect choice among equal keys is the contract; tests/test_sort_ties.py",
}
# The linear algebra calls LAPACK (oneMKL) matrix by matrix: LAPACK is the reference, and tests/test_linalg.py
# compares every op with the CPU's, which calls the same routines.
for _name in ("cholesky", "cholesky_of", "cholesky_inverse", "cholesky_solve", "lu_factor", "lu_solve",
              "triangular_solve", "ldl_factor", "ldl_solve", "geqrf", "orgqr", "ormqr", "eigh", "eig",
              "eig_complex_vectors", "svd"):
    ALLOWLIST[_name] = "LAPACK through oneMKL, per matrix; tests/test_linalg.py compares it with the CPU's LAPACK"


def code_of(text):
    """C++ text without comments and preprocessor lines (continued #define lines included)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)


DECLARATION = re.compile(r"^(?!(?:inline|constexpr|static|template|using|typedef|struct|class|enum|friend)\b)"
                         r"[\w:<>,* &]+?[\s*&](\w+)\s*\((.*)\)\s*(?:noexcept)?$", re.S)


def entry_points(header):
    """The functions a public header declares in namespace mlu::kernels: declarations (not definitions) at
    namespace scope, outside nested namespaces such as detail, not inline, constexpr or templates."""
    text = code_of(header.read_text())
    names, stack, statement = [], [], ""
    for c in text:
        if c == "{":
            m = re.search(r"namespace\s+([\w:]*)\s*$", statement)
            stack.append(m.group(1) if m else None)
            statement = "" if m else statement + c
        elif c == "}":
            kind = stack.pop()
            statement = "" if kind is not None else statement + c
            if kind is None and all(k is not None for k in stack):
                statement = ""  # the end of a definition (an inline function, a struct) at namespace scope
        elif c == ";" and all(k is not None for k in stack):
            m = DECLARATION.match(" ".join(statement.split()))
            if stack == ["mlu::kernels"] and m:
                names.append(m.group(1))
            statement = ""
        else:
            statement += c
    return names


def families():
    return sorted(h.stem for h in PUBLIC.glob("*.h") if h.stem not in INFRASTRUCTURE)


def declared_refs():
    refs = set()
    for path in list(PUBLIC.glob("*.h")) + list(SRC.rglob("*.h")):
        refs.update(re.findall(r"\b(\w+_ref)\s*\(", code_of(path.read_text())))
    return refs


def kernels_without_refs():
    """{name: header} of the public entry points with no reference, queries left out."""
    found = {}
    for family in families():
        for name in entry_points(PUBLIC / f"{family}.h"):
            if not name.endswith("_ref") and not QUERY.search(name):
                found[name] = family
    refs = declared_refs()
    return {name: family for name, family in found.items() if ALIASES.get(name, f"{name}_ref") not in refs}


def test_the_parser_finds_the_entry_points():
    norm = entry_points(PUBLIC / "norm.h")
    assert "layer_norm" in norm and "layer_norm_ref" in norm and "batch_norm_training_statistics" in norm
    assert "pointwise" in entry_points(PUBLIC / "pointwise.h")  # past the MLU_POINTWISE_OPS macro
    assert "cholesky" in entry_points(PUBLIC / "linalg.h")
    assert not [n for n in entry_points(PUBLIC / "philox.h")]  # constexpr and inline only


def test_every_entry_point_has_a_reference_or_a_reason():
    missing = kernels_without_refs()
    unexplained = {name: family for name, family in missing.items() if name not in ALLOWLIST}
    assert not unexplained, (f"entry points with neither a `<name>_ref` declared in kernels/ nor a reason in "
                             f"ALLOWLIST: {unexplained}")
    stale = sorted(set(ALLOWLIST) - set(missing))
    assert not stale, f"ALLOWLIST names entry points that now have a reference (or no longer exist): {stale}"
    for alias, ref in ALIASES.items():
        assert ref in declared_refs(), f"{alias}: {ref} is declared nowhere"


# The role suffixes of kernels/src/README.md: <family>_isa.cpp, <family>_ref.cpp, <family>_table.h.
ROLE = re.compile(r"^(\w+)_(?:isa\.cpp|ref\.cpp|table\.h)$")


def test_the_layout_is_one_folder_per_family():
    folders = sorted(p.name for p in SRC.iterdir() if p.is_dir())
    assert folders == sorted(families() + ["common"]), "src/ holds one folder per public family and common/"
    assert not sorted(p.name for p in SRC.glob("*.*") if p.name != "README.md"), "files directly in src/"
    for family in families():
        for path in (SRC / family).iterdir():
            m = ROLE.match(path.name)
            assert not m or m.group(1) == family, f"{path}: a role's name, but not this family's"
        assert (SRC / family / f"{family}.cpp").exists(), f"src/{family}/{family}.cpp: the entry points"
        isa, table = SRC / family / f"{family}_isa.cpp", SRC / family / f"{family}_table.h"
        assert isa.exists() == table.exists(), f"src/{family}: an ISA file and its table header go together"
    cmake = (KERNELS / "CMakeLists.txt").read_text()
    for path in SRC.rglob("*.cpp"):
        rel = path.relative_to(KERNELS).as_posix()
        assert re.search(rf"(^|\s){re.escape(rel)}(\s|\))", cmake, re.M), f"{rel} is in no CMake source list"


# Per family: a script that runs one of its kernels on mlu, and the kernel names its log line may carry.
VERBOSE = {
    "advanced_index": ("x = torch.randn(8, 4, device=d); x[torch.tensor([0, 3, 3], device=d)]", {"index_gather"}),
    "attention": ("q = torch.randn(1, 2, 16, 8, device=d); F.scaled_dot_product_attention(q, q, q)",
                  {"attention_forward"}),
    "box": ("torch.ops.torch_mlu.roi_align(torch.randn(1, 2, 8, 8, device=d),"
            " torch.tensor([[0.0, 1, 1, 6, 6]], device=d), 1.0, 2, 2, -1, False)", {"roi_align_forward"}),
    "conv": ("F.conv2d(torch.randn(1, 3, 8, 8, device=d), torch.randn(4, 3, 3, 3, device=d))", {"conv_forward"}),
    "copy": ("torch.randn(64, 32, device=d).t().contiguous()", {"copy"}),
    "ctc": ("lp = torch.randn(12, 2, 5, device=d).log_softmax(2);"
            "F.ctc_loss(lp, torch.tensor([[1, 2, 2], [3, 1, 4]], device=d), torch.tensor([12, 10]),"
            " torch.tensor([3, 2]))", {"ctc_loss_forward"}),
    "embedding_bag": ("F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3], device=d), torch.randn(10, 3, device=d),"
                      " torch.tensor([0, 3], device=d))", {"embedding_bag"}),
    "fft": ("torch.fft.fft(torch.randn(64, device=d, dtype=torch.complex64))", {"fft"}),
    "fill": ("torch.full((16, 16), 2.0, device=d)", {"fill"}),
    "gemm": ("a = torch.randn(32, 32, device=d); a @ a", {"gemm"}),
    "index": ("torch.gather(torch.randn(4, 6, device=d), 1, torch.tensor([[0, 5], [1, 1], [2, 0], [3, 4]],"
              " device=d))", {"gather"}),
    "linalg": ("a = torch.randn(4, 4, device=d, dtype=torch.float64); torch.linalg.cholesky(a @ a.mT + 4 * "
               "torch.eye(4, device=d, dtype=torch.float64))", {"cholesky", "cholesky_of"}),
    "loss": ("F.nll_loss(torch.randn(5, 3, device=d).log_softmax(1), torch.tensor([0, 2, 1, 1, 0], device=d))",
             {"nll_loss_forward"}),
    "norm": ("F.layer_norm(torch.randn(4, 16, device=d), (16,))", {"layer_norm"}),
    "optimizer": ("p = torch.nn.Parameter(torch.randn(8, device=d)); p.grad = torch.randn(8, device=d);"
                  " torch.optim.Adam([p], fused=True).step()", {"adam_step"}),
    "pointwise": ("torch.randn(16, device=d) + 1", {"pointwise"}),
    "pool": ("F.max_pool2d(torch.randn(1, 2, 8, 8, device=d), 2)", {"max_pool"}),
    "quantized_gemm": ("torch._weight_int8pack_mm(torch.randn(2, 32, device=d), torch.ones(16, 32, device=d,"
                       " dtype=torch.int8), torch.ones(16, device=d))", {"int8_weight_gemm"}),
    "random": ("torch.randn(16, device=d)", {"normal"}),
    "reduce": ("torch.randn(16, 16, device=d).sum(1)", {"reduce"}),
    "resample": ("F.interpolate(torch.randn(1, 2, 4, 4, device=d), scale_factor=2, mode='bilinear')", {"resample"}),
    "sampling": ("torch.randperm(16, device=d)", {"randperm"}),
    "select": ("torch.nonzero(torch.randn(8, 8, device=d) > 0)", {"nonzero", "count_nonzero"}),
    "sequence": ("torch.arange(16, device=d)", {"arange", "arange_int"}),
    "softmax": ("torch.softmax(torch.randn(4, 16, device=d), 1)", {"softmax"}),
    "sort": ("torch.sort(torch.randn(4, 16, device=d))", {"sort"}),
    "sparse": ("torch.randn(6, 5, device=d).relu().to_sparse_csr() @ torch.randn(5, 3, device=d)", {"spmm_csr"}),
    "triangle": ("torch.tril(torch.randn(8, 8, device=d))", {"triangle"}),
    "unfold": ("x = torch.randn(12, device=d, requires_grad=True); x.unfold(0, 4, 2).sum().backward()",
               {"unfold_backward"}),
}

MARK = "@@family "


def verbose_script():
    lines = ["import sys, torch, torch_mlu, torch.nn.functional as F", "d = 'mlu'"]
    for family, (code, _) in sorted(VERBOSE.items()):
        lines += [f"sys.stderr.write({MARK + family!r} + '\\n'); sys.stderr.flush()", code, "torch.mlu.synchronize()",
                  "sys.stderr.flush()"]
    return "\n".join(lines) + "\n"


def logged_kernels(stderr):
    """{family: set of kernel names logged while its script ran}."""
    found, family = {}, None
    for line in stderr.splitlines():
        if line.startswith(MARK):
            family = line[len(MARK):]
            found[family] = set()
        elif line.startswith("mlu_kernels_verbose,exec,") and family is not None:
            found[family].add(line.split(",")[2])
    return found


def test_every_family_has_a_verbose_script():
    assert sorted(VERBOSE) == families()


def test_every_family_prints_a_verbose_line(python):
    result = python(verbose_script(), env={"MLU_KERNELS_VERBOSE": "1", "TORCH_MLU_FALLBACK": "0"}, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    logged = logged_kernels(result.stderr)
    silent = {family: sorted(logged.get(family, ())) for family, (_, names) in VERBOSE.items()
              if not names & logged.get(family, set())}
    assert not silent, f"families whose kernel printed no MLU_KERNELS_VERBOSE line (logged instead): {silent}"
