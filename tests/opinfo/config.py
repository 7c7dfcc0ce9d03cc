"""Which ops, dtypes and tests the OpInfo harness instantiates (read once, at import time).

Environment:

  MLU_OPINFO=ci|full        ``ci`` (default): the representative shard `make test` runs (float32 compare
                            with CPU over CI_COMPARE_OPS plus a few out= / non-contiguous / error /
                            backward cases). ``full``: every op_db entry, every dtype the op supports.
  MLU_OPINFO_DTYPES=a,b     restrict dtypes (``float32,int64``...); default: ci float32, full all.
  MLU_OPINFO_TESTS=a,b      restrict tests (``compare_cpu,compare_cpu_grad,out,noncontiguous_samples,errors``).
  MLU_OPINFO_OPS=a,b        restrict ops to these op_db full names (``add``, ``normal.in_place``...).
  MLU_OPINFO_KNOWN_FAILURES=0
                            ignore tests/opinfo/known_failures.py (every case runs and reports its raw
                            outcome; `sweep.py --regen-known-failures` uses this).
  MLU_OPINFO_RUN_CRASHERS=1 also run the cases known_failures marks as crashing the process (only safe
                            under tests/opinfo/sweep.py, which survives a crash).
"""
import os

import torch

MODE = os.environ.get("MLU_OPINFO", "ci").strip().lower() or "ci"
if MODE not in ("ci", "full"):
    raise ValueError(f"MLU_OPINFO must be 'ci' or 'full', not {MODE!r}")


def _csv(name):
    value = os.environ.get(name, "").strip()
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _dtype(name):
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"MLU_OPINFO_DTYPES: {name!r} is not a torch dtype")
    return dtype


_dtype_names = _csv("MLU_OPINFO_DTYPES")
DTYPES = None if _dtype_names is None else {_dtype(n) for n in _dtype_names}
if DTYPES is None and MODE == "ci":
    DTYPES = {torch.float32}

ALL_TESTS = ("compare_cpu", "compare_cpu_grad", "out", "noncontiguous_samples", "errors")
TESTS = _csv("MLU_OPINFO_TESTS") or list(ALL_TESTS)
for _t in TESTS:
    if _t not in ALL_TESTS:
        raise ValueError(f"MLU_OPINFO_TESTS: unknown test {_t!r}; choose from {ALL_TESTS}")

OPS = _csv("MLU_OPINFO_OPS")
USE_KNOWN_FAILURES = os.environ.get("MLU_OPINFO_KNOWN_FAILURES", "1") != "0"
RUN_CRASHERS = os.environ.get("MLU_OPINFO_RUN_CRASHERS", "0") == "1"

# Backward is compared in float32 only (the scope of test_compare_cpu_grad, as tests/test_opinfo.py's docstring
# states it); MLU_OPINFO_DTYPES narrows it further.
GRAD_DTYPES = {torch.float32}

# --- the CI shard ---------------------------------------------------------------------------------
# float32 test_compare_cpu over these op_db entries (full names). Chosen to cover what models use:
# elementwise unary/binary/ternary math, comparisons, reductions, shape/view/indexing, matmul family,
# activations, normalization, pooling, losses, factories, sorting, cumulative ops. A few cases are there
# for the harness's own checks in test_opinfo.py: dropout and empty_like (op_db skips), erfinv and
# test_out bmm (op_db tolerance overrides), test_out cumsum (op_db expectedFailure).
CI_COMPARE_OPS = [
    # elementwise unary
    "abs", "neg", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan",
    "tanh", "sigmoid", "erf", "erfinv", "floor", "ceil", "trunc", "round", "sign", "square", "nan_to_num",
    "isnan", "logical_not", "bitwise_not", "clamp", "clamp_min", "lgamma", "atan",
    # elementwise binary / ternary
    "add", "sub", "mul", "div.no_rounding_mode", "div.floor_rounding", "pow", "fmod", "remainder", "maximum",
    "minimum", "atan2", "hypot", "xlogy", "lerp", "addcmul", "addcdiv", "where", "eq", "ne", "lt", "gt",
    "isclose", "logical_and", "bitwise_and", "rsub", "masked_fill",
    # reductions, scans, normalizations
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max.reduction_with_dim", "var", "std", "norm",
    "linalg.vector_norm", "logsumexp", "all", "any", "cumsum", "cumprod", "softmax", "log_softmax",
    # shapes, views, indexing
    "cat", "stack", "reshape", "view", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "expand",
    "narrow", "select", "split", "repeat", "flip", "roll", "tril", "triu", "gather", "scatter", "scatter_add",
    "index_select", "index_add", "index_put", "masked_select", "take", "__getitem__", "nonzero", "clone",
    "diagonal",
    # linear algebra
    "mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot", "outer", "inner", "tensordot",
    "einsum", "linalg.det",
    # neural-network functional
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.leaky_relu",
    "nn.functional.hardtanh", "nn.functional.softplus", "nn.functional.linear", "nn.functional.layer_norm",
    "nn.functional.batch_norm",
    "nn.functional.group_norm", "nn.functional.embedding", "nn.functional.embedding_bag", "nn.functional.unfold",
    "nn.functional.cross_entropy",
    "nn.functional.nll_loss", "nn.functional.mse_loss", "nn.functional.binary_cross_entropy_with_logits",
    "nn.functional.smooth_l1_loss", "nn.functional.huber_loss", "nn.functional.glu",
    "nn.functional.scaled_dot_product_attention", "nn.functional.binary_cross_entropy", "nn.functional.kl_div",
    "nn.functional.l1_loss", "nn.functional.rms_norm", "nn.functional.instance_norm", "nn.functional.pixel_shuffle",
    "nn.functional.local_response_norm", "cdist", "nn.functional.pdist",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.conv2d", "nn.functional.conv_transpose2d", "nn.functional.conv1d", "nn.functional.pad.constant",
    "nn.functional.interpolate.nearest", "nn.functional.interpolate.bilinear", "nn.functional.interpolate.bicubic",
    "nn.functional.max_pool3d", "nn.functional.adaptive_max_pool2d", "nn.functional.avg_pool3d",
    "nn.functional.max_pool1d", "nn.functional.adaptive_max_pool3d", "nn.functional.adaptive_avg_pool3d",
    "nn.functional.interpolate.linear", "nn.functional.interpolate.trilinear", "nn.functional.conv3d",
    "nn.functional.one_hot", "nn.functional.dropout", "nn.functional.pad.reflect", "nn.functional.pad.replicate",
    "nn.functional.pad.replicate_negative", "nn.functional.prelu", "nn.functional.multi_margin_loss",
    "nn.functional.multilabel_margin_loss", "nn.functional.ctc_loss",
    # factories, conversions, sorting
    "zeros_like", "full_like", "empty_like", "arange", "linspace", "eye", "sort", "topk", "argsort", "unique",
    "searchsorted", "to", "half", "long",
]

# The few other CI cases: the out= protocol, non-contiguous samples, error inputs, backward.
CI_OUT_OPS = ["add", "mul", "exp", "sum", "mm", "bmm", "cat", "clamp", "where", "topk", "index_select", "cumsum"]
CI_NONCONTIGUOUS_OPS = ["add", "mul", "exp", "sum", "mm", "softmax", "transpose", "gather", "cat",
                        "nn.functional.relu"]
CI_ERRORS_OPS = ["cat", "gather", "index_select", "mm", "softmax", "scatter", "topk", "take", "stack",
                 "clamp"]
CI_GRAD_OPS = ["add", "mul", "exp", "sum", "mean", "mm", "matmul", "softmax", "log_softmax",
               "nn.functional.relu", "nn.functional.gelu", "nn.functional.linear", "nn.functional.layer_norm",
               "nn.functional.batch_norm", "nn.functional.group_norm", "nn.functional.smooth_l1_loss",
               "nn.functional.scaled_dot_product_attention", "nn.functional.binary_cross_entropy",
               "nn.functional.interpolate.bilinear", "nn.functional.max_pool3d", "nn.functional.embedding_bag",
               "nn.functional.cross_entropy", "index_select", "cat"]
