"""Why each ATen op that op_db's cases still send to the CPU fallback has no mlu kernel yet, and
the cheapest way to give it one (from a survey of PyTorch 2.13's implementations; the sweep's
summary prints these next to the ops). Keys are the names torch_mlu.fallback_report() uses.
An op missing here shows as "not surveyed"."""

# What a reason says, in short:
#   stub: PyTorch's implementation is device-generic around a DispatchStub with no mlu kernel
#         (register the stub for PrivateUse1 and the exported at::native function);
#   compose: no generic implementation upstream, but mlu's existing ops compose it;
#   kernel: needs a kernel of its own;
#   device check: PyTorch's implementation refuses devices other than CPU/CUDA/XPU itself.
REASONS = {
    "aten::_logcumsumexp": "stub: logcumsumexp_stub (the exported _logcumsumexp_cpu is generic)",
    "aten::_histogramdd_bin_edges": "stub: histogramdd kernels (histogramdd_stub / linear stub)",
    "aten::_histogramdd_from_bin_cts": "stub: histogramdd_linear_stub",
    "aten::_histogramdd_from_bin_tensors": "stub: histogramdd_stub",
    "aten::histc": "stub: histogramdd_linear_stub (kept on the fallback for now: tests/test_fallback.py uses it "
                   "as its example op)",
    "aten::histogram.bin_ct": "stub: histogramdd_linear_stub + histogram_select_outer_bin_edges_stub",
    "aten::histogram.bins_tensor": "stub: histogramdd_stub",
    "aten::sparse_sampled_addmm": "kernel: CSR sampled dense x dense product (CPU and CUDA kernels differ; "
                                  "the sparse CPU fallback runs it)",
    "aten::_validate_compressed_sparse_indices": "kernel: CSR index invariant checks (CPU and CUDA kernels differ; "
                                                "the check reads the indices in place on the fallback)",
    "aten::sparse_mask": "kernel: a compressed mask over a dense tensor inside sampled_addmm (the COO form is "
                         "native, csrc/aten/sparse/SparseOps.cpp)",
    "aten::addmm.out": "kernel: sampled_addmm's sparse-result addmm (CSR x dense into a dense out is native)",
    "aten::channel_shuffle": "kernel: the generic at::native path returns a contiguous result where the CPU "
                             "keeps channels-last (tests/test_layouts.py); a permuting copy would do",
    "aten::_upsample_bicubic2d_aa.out": "kernel: antialiased bicubic resampling",
    "aten::_upsample_bilinear2d_aa.out": "kernel: antialiased bilinear resampling",
    "aten::bucketize.Tensor": "kernel: binary search (shared with searchsorted)",
    "aten::searchsorted.Tensor": "kernel: binary search with sorter and side",
    "aten::searchsorted.Scalar": "kernel: binary search (the Scalar form wraps the Tensor one)",
    "aten::embedding_renorm_": "compose: unique rows, their norms, a scale, index_copy_ (CPU's loops on the host)",
    "aten::frexp.Tensor_out": "stub: frexp_stub, a two-output pointwise kernel",
    "aten::grid_sampler_2d": "kernel: 2-d grid sampling (bilinear / nearest / bicubic, three padding modes)",
    "aten::grid_sampler_3d": "kernel: 3-d grid sampling",
    "aten::hash_tensor.out": "kernel: xor-reduction of bits into uint64 (uint64 tensors are not supported on mlu)",
    "aten::mode": "device check: at::native::mode refuses devices other than CPU, CUDA and XPU; needs its own "
                  "wrapper and a kernel",
    "aten::linalg_lstsq.out": "stub: lstsq_stub with the gelsy driver (the default for non-CUDA devices)",
    "aten::linalg_matrix_exp": "compose: scaling and squaring on mm (upstream's builds its coefficients on the "
                               "host and uses a stub without an mlu kernel)",
    "aten::segment_reduce": "stub: _segment_reduce_lengths/offsets stubs (segment_reduce_kernel is generic)",
    "aten::_segment_reduce_backward": "stub: the backward stubs",
}

# out= overloads (and two variants) whose functional form is native: seen in test_out only;
# each wants its out= form registered beside the functional one.
_OUT_ONLY = ["aten::_logcumsumexp.out", "aten::_native_batch_norm_legit.no_stats_out",
             "aten::_native_batch_norm_legit.out", "aten::amax", "aten::amin", "aten::argmax.out",
             "aten::argmin.out", "aten::bernoulli.out", "aten::bucketize.Tensor_out", "aten::histc.out",
             "aten::histogram.bin_ct_out", "aten::histogram.bins_tensor_out", "aten::index_add.out",
             "aten::index_copy.out", "aten::log_sigmoid_forward.output", "aten::masked_select.out",
             "aten::max.dim_max", "aten::max.unary_out", "aten::min.dim_min", "aten::min.unary_out",
             "aten::narrow_copy.out", "aten::native_batch_norm.out", "aten::nonzero.out",
             "aten::normal.Tensor_Tensor_out", "aten::searchsorted.Scalar_out",
             "aten::searchsorted.Tensor_out", "aten::std.correction_out", "aten::topk.values",
             "aten::var.correction_out"]
REASONS.update({name: "out= form not registered; the functional form is native (or listed above)"
                for name in _OUT_ONLY})
REASONS.update({
    "aten::grid_sampler_2d_backward": "kernel: with grid_sampler_2d",
    "aten::grid_sampler_3d_backward": "kernel: with grid_sampler_3d",
    "aten::_upsample_bilinear2d_aa_backward.grad_input": "kernel: with _upsample_bilinear2d_aa",
    "aten::_efficientzerotensor": "kernel: a zero tensor without storage (ZeroTensor dispatch key) on mlu",
    "aten::masked_fill_.Tensor": "a non-0-dim value (the CPU's error) or a complex32 self",
    # Complex forms the pointwise kernels lack (complex64 sweep; their real forms are native).
    "aten::exp2": "kernel: complex exp2 (the CPU's std::pow(2, z)); the real forms are native",
    "aten::expm1": "kernel: complex expm1 (c10's formula for small |z|); the real forms are native",
    "aten::log1p": "kernel: complex log1p (c10's formula for small |z|); the real forms are native",
    "aten::logaddexp": "kernel: complex logaddexp (the CPU's _log_add_exp_helper); the real forms are native",
    "aten::sinc": "kernel: complex sinc; the real forms are native",
    "aten::silu": "kernel: complex silu (z / (1 + exp(-z))); the real forms are native",
    "aten::lerp.Scalar": "kernel: complex lerp (the CPU's weight < 0.5 branch on |weight|); the real forms are native",
    "aten::lerp.Tensor": "kernel: complex lerp (the CPU's weight < 0.5 branch on |weight|); the real forms are native",
    "aten::logspace.out": "kernel: complex logspace (std::pow(base, z) of a complex linspace whose step is a complex "
                          "division); real logspace is native",
    "aten::rrelu_with_noise": "kernel: rrelu's random slopes drawn from mlu's generator",
})
