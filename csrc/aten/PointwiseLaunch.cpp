#include "csrc/aten/PointwiseLaunch.h"

#include <algorithm>
#include <cstring>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/native/Resize.h>
#include <c10/core/DynamicCast.h>
#include <mlu_kernels/select.h>

#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {

namespace {

namespace k = mlu::kernels;

// Note [Integer division by zero]
// The kernels write 0 for an integer division or remainder by zero; PyTorch's
// CPU raises "ZeroDivisionError". A CPU-scalar divisor is checked on the host
// (raising at the call, like CPU); a tensor divisor is scanned by the task
// before the kernel runs, and a zero makes the task fail: a device-side error
// raised at the next synchronisation, the output left unwritten.
bool divides_integers(PointwiseOp op, k::ScalarType compute) {
  const bool division = op == PointwiseOp::DivTrunc || op == PointwiseOp::DivFloor || op == PointwiseOp::Remainder ||
                        op == PointwiseOp::Fmod;
  return division && compute != k::ScalarType::Float16 && compute != k::ScalarType::BFloat16 &&
         compute != k::ScalarType::Float32 && compute != k::ScalarType::Float64;
}

constexpr const char* kZeroDivision = "ZeroDivisionError";

// Note [16-bit scalars narrowed as on the CPU]
// The CPU's kernels load every input as the common dtype before computing in
// float, so a CPU scalar (a Python number, a 0-dim CPU tensor) meeting a
// Float16 / BFloat16 tensor is first rounded to 16 bits: bf16 + 0.3 adds
// 0.30078125. The exceptions are mul and true division, whose reduced-float
// kernels read the scalar operand unrounded (original_scalar_value), and
// floor division, whose unrounded divisor matches the CPU's results. The
// kernels here convert each operand straight to the compute type, so the
// glue narrows such scalars on the host before the launch.
bool narrows_scalar(PointwiseOp op, int operand) {
  return !(operand == 2 && (op == PointwiseOp::Mul || op == PointwiseOp::Div || op == PointwiseOp::DivFloor));
}

// `bytes` (a scalar of dtype `from`) rewritten in place as a `to` value.
void narrow_scalar(unsigned char* bytes, at::ScalarType from, at::ScalarType to) {
  if (to == at::kHalf) {
    const auto v = c10::fetch_and_cast<at::Half>(from, bytes);
    std::memcpy(bytes, &v, sizeof v);
  } else {
    const auto v = c10::fetch_and_cast<at::BFloat16>(from, bytes);
    std::memcpy(bytes, &v, sizeof v);
  }
}

// Note [Compact pointwise tasks]
// Most iterators have few dims after TensorIterator coalesced them, so the
// task carries its operands in a compact form (kCompactDims dims) that fits
// the queue's inline task storage; the full k::Operand array (16 dims) is
// rebuilt on the device thread. Deeper iterators take the same path with the
// full size, which the queue stores on the heap.
template <int D>
struct PointwiseTask {
  static constexpr int kMaxOperands = 4;
  PointwiseOp op;
  k::ScalarType compute;
  int8_t ndim;
  int8_t n_operands;
  uint8_t scalar_mask = 0;  // bit k: operand k is a CPU scalar stored in `scalars`
  k::ScalarType dtypes[kMaxOperands];
  int64_t sizes[D];
  int64_t strides[kMaxOperands][D];
  void* data[kMaxOperands];
  alignas(8) unsigned char scalars[kMaxOperands][16];
  OpParams params;

  void operator()(mlu::TaskContext& context) const {
    k::Shape shape;
    shape.ndim = ndim;
    k::Operand operands[kMaxOperands];
    for (int d = 0; d < ndim; ++d) shape.sizes[d] = sizes[d];
    for (int i = 0; i < n_operands; ++i) {
      const bool scalar = (scalar_mask >> i) & 1;
      operands[i].data = scalar ? const_cast<unsigned char*>(scalars[i]) : data[i];
      operands[i].dtype = dtypes[i];
      for (int d = 0; d < ndim; ++d) operands[i].strides.v[d] = scalar ? 0 : strides[i][d];
    }
    if (divides_integers(op, compute) && k::count_nonzero(shape, operands[2]) < k::numel(shape)) {
      context.fail(std::string(kZeroDivision) + ": integer division or remainder by zero (" + k::pointwise_name(op) +
                   ")");
      return;
    }
    k::pointwise(op, compute, shape, operands, params);
  }
};

constexpr int kCompactDims = 4;

template <int D>
void fill_and_launch(const at::TensorIteratorBase& iter, PointwiseOp op, k::ScalarType compute,
                     const OpParams& params) {
  // Default-initialised, not zeroed: every field operator() reads is written
  // below (sizes and strides up to ndim, data or scalars per scalar_mask), and
  // zeroing the whole task costs a tiny op more than filling it.
  PointwiseTask<D> task;
  task.op = op;
  task.compute = compute;
  task.params = params;
  const int ndim = iter.ndim();
  task.ndim = static_cast<int8_t>(ndim);
  task.n_operands = static_cast<int8_t>(iter.ntensors());
  // TensorIterator orders dims fastest first; the kernels want row-major.
  for (int d = 0; d < ndim; ++d) task.sizes[ndim - 1 - d] = iter.shape()[d];
  for (int i = 0; i < iter.ntensors(); ++i) {
    task.dtypes[i] = require_kernel_dtype(iter.dtype(i), "pointwise");
    const int64_t element = static_cast<int64_t>(at::elementSize(iter.dtype(i)));
    if (iter.is_cpu_scalar(i)) {
      task.scalar_mask |= static_cast<uint8_t>(1u << i);
      std::memcpy(task.scalars[i], iter.data_ptr(i), static_cast<size_t>(element));
      const at::ScalarType common = iter.maybe_common_dtype().value_or(iter.dtype(i));
      if ((common == at::kHalf || common == at::kBFloat16) && iter.dtype(i) != common && i >= iter.noutputs() &&
          !at::isComplexType(iter.dtype(i)) && narrows_scalar(op, i)) {
        narrow_scalar(task.scalars[i], iter.dtype(i), common);
        task.dtypes[i] = require_kernel_dtype(common, "pointwise");
      }
      if (i == 2 && divides_integers(op, compute)) {
        bool zero = true;
        for (int64_t b = 0; b < element; ++b) zero = zero && task.scalars[i][b] == 0;
        TORCH_CHECK(!zero, kZeroDivision);
      }
      continue;
    }
    task.data[i] = device_ptr(iter.data_ptr(i));
    for (int d = 0; d < ndim; ++d) task.strides[i][ndim - 1 - d] = iter.strides(i)[d] / element;
  }
  // No device guard: launch_kernel names the device, and the op's own guard
  // (StructuredPointwise.h) already made it current for the outputs.
  if (iter.numel() <= kSmallKernelElements) {
    launch_small_kernel(iter.device(0).index(), k::pointwise_name(op), task);
  } else {
    launch_kernel(iter.device(0).index(), k::pointwise_name(op), task);
  }
}

}  // namespace

bool launch_pointwise(const at::TensorIteratorBase& iter, PointwiseOp op, const OpParams& params,
                      std::optional<at::ScalarType> compute) {
  const at::ScalarType compute_type = compute.value_or(
      iter.maybe_common_dtype().value_or(iter.dtype(iter.noutputs() < iter.ntensors() ? iter.noutputs() : 0)));
  const std::optional<k::ScalarType> kernel_compute = kernel_dtype(compute_type);
  if (!kernel_compute || !k::pointwise_supports(op, *kernel_compute)) return false;
  for (int i = 0; i < iter.ntensors(); ++i) {
    if (!kernel_dtype(iter.dtype(i))) return false;
  }
  TORCH_INTERNAL_ASSERT(iter.ntensors() == k::arity(op) + 1, "pointwise op ", k::pointwise_name(op), " expects ",
                        k::arity(op) + 1, " operands, the iterator has ", iter.ntensors());
  if (iter.numel() == 0) return true;
  TORCH_CHECK(iter.ndim() <= k::kMaxDims, "mlu pointwise kernels support at most ", k::kMaxDims,
              " dimensions after coalescing, got ", iter.ndim());
  if (iter.ndim() <= kCompactDims) {
    fill_and_launch<kCompactDims>(iter, op, *kernel_compute, params);
  } else {
    fill_and_launch<k::kMaxDims>(iter, op, *kernel_compute, params);
  }
  return true;
}

bool launch_complex_to_real(const at::Tensor& self, at::Tensor& result, PointwiseOp op) {
  if (!kernel_dtype(self.scalar_type())) return false;  // ComplexHalf
  const auto float_type = c10::toRealValueType(self.scalar_type());
  TORCH_CHECK(at::canCast(float_type, result.scalar_type()), "result type ", float_type,
              " can't be cast to the desired output type ", result.scalar_type());
  at::native::resize_output(result, self.sizes());
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(result).add_const_input(self).build();
  TORCH_INTERNAL_ASSERT(launch_pointwise(iter, op, {}, self.scalar_type()), "no complex kernel for ",
                        k::pointwise_name(op));
  return true;
}

void set_param(OpParams& params, int k, const at::Scalar& value) {
  if (value.isComplex()) {
    const c10::complex<double> z = value.toComplexDouble();
    params.f[k] = z.real();
    params.f_imag[k] = z.imag();
    params.i[k] = static_cast<int64_t>(z.real());
  } else if (value.isBoolean()) {
    params.f[k] = value.to<bool>() ? 1.0 : 0.0;
    params.i[k] = value.to<bool>() ? 1 : 0;
  } else if (value.isIntegral(/*includeBool=*/false)) {
    params.i[k] = value.to<int64_t>();
    params.f[k] = static_cast<double>(params.i[k]);
  } else {
    params.f[k] = value.to<double>();
    params.i[k] = static_cast<int64_t>(params.f[k]);
  }
}

// Note [The CPU's vector body and scalar loop]
int64_t cpu_loop_chunk(int64_t n) {
  const int64_t grain = at::internal::GRAIN_SIZE, threads = at::get_num_threads();
  const int64_t chunks = n < grain || threads == 1 ? 1 : std::min(threads, (n + grain - 1) / grain);
  return (n + chunks - 1) / chunks;
}

bool cpu_loop_all_scalar() {
  static const bool all_scalar = at::get_cpu_capability() == "DEFAULT";
  return all_scalar;
}

std::vector<std::pair<int64_t, int64_t>> cpu_scalar_loop_ranges(int64_t n) {
  if (cpu_loop_all_scalar()) return {{0, n}};
  constexpr int64_t width = 32;  // what the vector body covers at a time, with AVX512 and with AVX2 alike
  const int64_t chunk = cpu_loop_chunk(n);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    if ((end - begin) % width != 0) ranges.emplace_back(end - (end - begin) % width, end);
  }
  return ranges;
}

OpParams make_params(std::initializer_list<at::Scalar> values) {
  OpParams params;
  int k = 0;
  for (const at::Scalar& v : values) set_param(params, k++, v);
  return params;
}

}  // namespace torch_mlu
