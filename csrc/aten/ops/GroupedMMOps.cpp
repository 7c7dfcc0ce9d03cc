// torch._grouped_mm on mlu (the products of a mixture-of-experts layer): one
// task runs a GEMM (mlu_kernels/gemm.h) per group, reading the group bounds
// `offs` on the device, so the host never waits for them.
//
// Note [Grouped products]
// offs[i] is the exclusive end of group i (group 0 starts at 0), and which
// dim it splits depends on the operands (PyTorch's CPU fallback and CUDA):
//   2-D a [M, K] x 3-D b [G, K, N] -> [M, N]: rows of a and of the result;
//   3-D a [G, M, K] x 2-D b [K, N] -> [M, N]: columns of b and of the result;
//   2-D a [M, K] x 2-D b [K, N] -> [G, M, N]: the depth K (weight gradients);
//   3-D x 3-D, no offs: a batch of products.
// The CPU reads past its operands for offsets beyond the split dim and takes
// decreasing ones silently; here either is a device-side error naming the
// offset. Rows (or columns) past offs[-1], which the CPU and CUDA leave
// uninitialised, are zero. The CPU's checks and texts otherwise, less its
// stride rule (every layout runs here; the meta function of a compiled
// graph still applies its own). The backward is PyTorch's formula, which
// calls _grouped_mm again.
#include <ATen/ops/empty.h>
#include <mlu_kernels/gemm.h>
#include <mlu_kernels/parallel.h>

#include <string>
#include <vector>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;

enum class Split : uint8_t { Rows, Columns, Depth, None };

struct GroupedCall {
  k::GemmArgs base;  // the whole operands; per group, narrowed
  Split split;
  int64_t groups;
  int64_t limit;  // the split dim's size
  const int32_t* offs;
  int64_t a_g, b_g, c_g;  // batch strides of the 3-D operands (elements)
  int64_t a_cs, b_rs, c_rs, c_cs, a_rs, b_cs;
};

// Group g's product.
k::GemmArgs group_args(const GroupedCall& call, int64_t g, int64_t start, int64_t end) {
  const auto size = static_cast<int64_t>(k::element_size(call.base.dtype));
  auto at = [size](void* p, int64_t elements) { return static_cast<unsigned char*>(p) + elements * size; };
  k::GemmArgs args = call.base;
  switch (call.split) {
    case Split::Rows:  // a [M, K] rows, b[g], c rows
      args.m = end - start;
      args.a.data = at(args.a.data, start * call.a_rs);
      args.b.data = at(args.b.data, g * call.b_g);
      args.c.data = at(args.c.data, start * call.c_rs);
      break;
    case Split::Columns:  // a[g], b [K, N] columns, c columns
      args.n = end - start;
      args.a.data = at(args.a.data, g * call.a_g);
      args.b.data = at(args.b.data, start * call.b_cs);
      args.c.data = at(args.c.data, start * call.c_cs);
      break;
    case Split::Depth:  // a [M, K] columns, b [K, N] rows, c[g]
      args.k = end - start;
      args.a.data = at(args.a.data, start * call.a_cs);
      args.b.data = at(args.b.data, start * call.b_rs);
      args.c.data = at(args.c.data, g * call.c_g);
      break;
    case Split::None:
      args.a.data = at(args.a.data, g * call.a_g);
      args.b.data = at(args.b.data, g * call.b_g);
      args.c.data = at(args.c.data, g * call.c_g);
      break;
  }
  return args;
}

// The bounds first (a bad one fails the task before any product), then the
// groups over the compute threads, each product on its thread: a group's
// product is small (a few experts' share of the tokens), and one split over
// all threads per group cost 0.4 ms of set-up at 512 tokens x 8 experts
// (Note [oneDNN products] in the kernels: a primitive per block and call).
void run_groups(const GroupedCall& call, mlu::TaskContext& context) {
  std::vector<int64_t> ends(static_cast<size_t>(call.groups), 0);
  int64_t start = 0;
  for (int64_t g = 0; g < call.groups && call.split != Split::None; ++g) {
    const int64_t end = call.offs[g];
    if (end < start || end > call.limit) {
      context.fail("_grouped_mm: offs must be non-decreasing and at most " + std::to_string(call.limit) +
                   " (the size of the dim it splits), got offs[" + std::to_string(g) + "] = " + std::to_string(end) +
                   (g > 0 ? " after " + std::to_string(start) : std::string()));
      return;
    }
    ends[static_cast<size_t>(g)] = start = end;
  }
  k::parallel_for(0, call.groups, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t g = lo; g < hi; ++g) {
      const int64_t begin = g > 0 ? ends[static_cast<size_t>(g - 1)] : 0;
      const k::GemmArgs args = group_args(call, g, begin, ends[static_cast<size_t>(g)]);
      if (args.m > 0 && args.n > 0) k::gemm(args);
    }
  });
}

at::Tensor grouped_mm_mlu(T a, T b, const std::optional<at::Tensor>& offs, const std::optional<at::Tensor>& bias,
                          std::optional<at::ScalarType> out_dtype) {
  TORCH_CHECK(a.dim() == 2 || a.dim() == 3, "mat_a has to be 2 or 3d");
  TORCH_CHECK(b.dim() == 2 || b.dim() == 3, "mat_b has to be 2 or 3d");
  const auto type = a.scalar_type();
  TORCH_CHECK(type == at::kFloat || type == at::kBFloat16 || type == at::kHalf,
              "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ", type);
  TORCH_CHECK(b.scalar_type() == type, "expected m1 and m2 to have the same dtype, but got: ", a.dtype(),
              " != ", b.dtype());
  const bool both_3d = a.dim() == 3 && b.dim() == 3;
  const bool has_offs = offs.has_value() && offs->defined();
  TORCH_CHECK(has_offs != both_3d,
              "Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d");
  if (has_offs) {
    TORCH_CHECK(offs->scalar_type() == at::kInt, "Offsets have to be int32");
    TORCH_CHECK(offs->dim() == 1, "offs has to be 1-D, got ", offs->dim(), "-D");
  }
  TORCH_CHECK(!bias.has_value() || !bias->defined(), "Bias not supported yet");
  TORCH_CHECK(!out_dtype.has_value() || *out_dtype == type, "Grouped gemm output dtype must match `mat_a` dtype");
  if (a.dim() != 2 || b.dim() != 2) {
    TORCH_CHECK(a.size(-1) == b.size(-2), "contraction dimension of mat_a and mat_b must match");
  }
  const int64_t groups = has_offs ? offs->size(0) : a.size(0);
  if (a.dim() == 3) TORCH_CHECK(a.size(0) == groups, "matrix batch sizes have to match");
  if (b.dim() == 3) TORCH_CHECK(b.size(0) == groups, "matrix batch sizes have to match");
  check_same_device("_grouped_mm", {a, b, has_offs ? *offs : a});

  Split split = Split::None;
  std::vector<int64_t> shape;
  int64_t limit = 0;
  if (a.dim() == 2 && b.dim() == 3) {
    split = Split::Rows;
    shape = {a.size(0), b.size(2)};
    limit = a.size(0);
  } else if (a.dim() == 3 && b.dim() == 2) {
    split = Split::Columns;
    shape = {a.size(1), b.size(1)};
    limit = b.size(1);
  } else if (a.dim() == 2) {
    TORCH_CHECK(a.size(1) == b.size(0), "contraction dimension of mat_a and mat_b must match");
    split = Split::Depth;
    shape = {groups, a.size(0), b.size(1)};
    limit = a.size(1);
  } else {
    shape = {groups, a.size(1), b.size(2)};
  }
  c10::DeviceGuard guard(a.device());
  // Zero: the rows or columns past offs[-1] (Note [Grouped products]).
  at::Tensor out = at::empty(shape, a.options());
  if (out.numel() == 0) return out;
  if (split == Split::Rows || split == Split::Columns) out.zero_();
  const at::Tensor offsets = has_offs ? offs->contiguous() : at::Tensor();

  GroupedCall call{};
  call.base.dtype = require_kernel_dtype(type, "_grouped_mm");
  call.base.alpha = 1;
  call.base.beta = 0;
  const int64_t ad = a.dim(), bd = b.dim(), cd = out.dim();
  call.base.m = out.size(cd - 2);
  call.base.n = out.size(cd - 1);
  call.base.k = a.size(ad - 1);
  call.base.a = {const_cast<void*>(device_ptr<const void>(a)), a.stride(ad - 2), a.stride(ad - 1)};
  call.base.b = {const_cast<void*>(device_ptr<const void>(b)), b.stride(bd - 2), b.stride(bd - 1)};
  call.base.c = {device_ptr<void>(out), out.stride(cd - 2), out.stride(cd - 1)};
  call.split = split;
  call.groups = groups;
  call.limit = limit;
  call.offs = has_offs ? device_ptr<const int32_t>(offsets) : nullptr;
  call.a_g = ad == 3 ? a.stride(0) : 0;
  call.b_g = bd == 3 ? b.stride(0) : 0;
  call.c_g = cd == 3 ? out.stride(0) : 0;
  call.a_rs = a.stride(ad - 2);
  call.a_cs = a.stride(ad - 1);
  call.b_rs = b.stride(bd - 2);
  call.b_cs = b.stride(bd - 1);
  call.c_rs = out.stride(cd - 2);
  call.c_cs = out.stride(cd - 1);
  launch_kernel(a.device().index(), "grouped_mm", [=](mlu::TaskContext& context) { run_groups(call, context); });
  return out;
}

}  // namespace
}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/GroupedMMOps.inc"
