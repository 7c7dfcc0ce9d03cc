// PyTorch's own at::native implementations of index_fill_, take, put_,
// linalg_cross, renorm, aminmax and isin, run on mlu by giving their DispatchStubs
// mlu implementations (REGISTER_PRIVATEUSE1_DISPATCH).
//
// The at::native functions are device-generic: they check the arguments
// (with PyTorch's own messages), resize outputs and build the TensorIterator,
// and only the innermost step goes through a stub that PyTorch fills for CPU
// and CUDA alone. Registering them for mlu keeps every check and layout rule
// of the CPU; each stub below computes its step from mlu's native ops, on
// the operands the at::native function prepared.
//
// Index values are checked on the device by the scatter / gather kernels the
// stubs end in: a bad index is a device-side error raised at the next
// synchronisation (IndexOps.cpp), where the CPU raises at once.
#include <ATen/TensorIterator.h>
#include <ATen/native/Cross.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/IndexKernel.h>
#include <ATen/native/Normalization.h>
#include <ATen/native/ReduceOps.h>
#include <ATen/native/TensorCompare.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/aminmax_native.h>
#include <ATen/ops/index_fill_native.h>
#include <ATen/ops/isin_native.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/linalg_cross_native.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/put_native.h>
#include <ATen/ops/renorm_native.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/take_native.h>
#include <ATen/ops/where.h>

#include "csrc/aten/Structured.h"

namespace torch_mlu {
namespace {

// index + size where index < 0: the wrap the CPU's index_fill / take / put
// kernels apply before their bounds checks.
at::Tensor wrap_negative(const at::Tensor& index, int64_t size) {
  return at::where(index.lt(0), index.add(size), index);
}

// at::native::index_fill_ hands over self restrided to stride 0 (and
// index.numel() long) along dim, and index restrided along dim; the fill is a
// scatter of the value into self along dim. An expanded self (deprecated;
// at::native::index_fill_ warns) has elements sharing memory, which all take
// the same value: one representative per location is filled, and when dim
// itself is expanded, every location (the CPU's kernel writes them all).
void index_fill_mlu(at::TensorIterator& iter, int64_t dim, int64_t self_dim_size, int64_t self_dim_stride,
                    const at::Scalar& source) {
  const at::Tensor& self_restrided = iter.tensor(0);
  const at::Tensor& index_restrided = iter.tensor(1);
  const int64_t n = self_restrided.size(dim);
  if (n == 0) return;
  auto sizes = self_restrided.sizes().vec();
  auto strides = self_restrided.strides().vec();
  sizes[dim] = self_dim_size;
  strides[dim] = self_dim_stride;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] == 0 && static_cast<int64_t>(d) != dim) sizes[d] = 1;
  }
  at::Tensor self = self_restrided.as_strided(sizes, strides);
  if (self_dim_stride == 0 && self_dim_size > 1) {
    self.narrow(dim, 0, 1).fill_(source);
    return;
  }
  at::Tensor index = index_restrided.as_strided({n}, {index_restrided.stride(dim)});
  std::vector<int64_t> index_shape(self.dim(), 1);
  index_shape[dim] = n;
  auto expanded_shape = sizes;
  expanded_shape[dim] = n;
  self.scatter_(dim, wrap_negative(index, self_dim_size).reshape(index_shape).expand(expanded_shape), source);
}

// at::native::take_out: iter = [out (index's shape), index].
void take_mlu(at::TensorIterator& iter, const at::TensorBase& input) {
  const at::Tensor& out = iter.tensor(0);
  const at::Tensor& index = iter.tensor(1);
  const at::Tensor flat = at::Tensor(input).reshape(-1);
  out.copy_(flat.index_select(0, wrap_negative(index.reshape(-1), flat.numel())).view(out.sizes()));
}

// at::native::put_: iter = [source, index reshaped to source's shape].
void put_mlu(at::TensorIterator& iter, const at::TensorBase& self_base, bool accumulate) {
  const at::Tensor& source = iter.tensor(0);
  const at::Tensor& index = iter.tensor(1);
  at::Tensor self(self_base);
  at::Tensor flat = self.reshape(-1);
  const c10::List<std::optional<at::Tensor>> indices{wrap_negative(index.reshape(-1), flat.numel())};
  flat.index_put_(indices, source.reshape(-1), accumulate);
  if (!flat.is_alias_of(self)) self.copy_(flat.view(self.sizes()));
}

// result[i] = a[i+1] * b[i+2] - a[i+2] * b[i+1] (indices mod 3) along dim:
// each product and the difference in the element type, as the CPU's loop.
void cross_mlu(const at::Tensor& result, const at::Tensor& a, const at::Tensor& b, const int64_t dim) {
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t j = (i + 1) % 3, k = (i + 2) % 3;
    at::Tensor r = result.select(dim, i);
    at::sub_out(r, at::mul(a.select(dim, j), b.select(dim, k)), at::mul(a.select(dim, k), b.select(dim, j)));
  }
}

// iter = [factor, norm], computed in norm's type as the CPU's kernel:
// norm > maxnorm ? maxnorm / (norm + 1e-7) : 1.
void renorm_scale_factor_mlu(at::TensorIteratorBase& iter, double maxnorm) {
  const at::Tensor& factor = iter.tensor(0);
  const at::Tensor& norm = iter.tensor(1);
  const at::Tensor max_t = at::scalar_tensor(maxnorm, norm.options());
  const at::Tensor scaled = max_t.div(norm.add(1e-7));
  factor.copy_(at::where(norm.gt(max_t), scaled, at::scalar_tensor(1, norm.options())));
}

void aminmax_mlu(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& min, at::Tensor& max) {
  at::amin_out(min, self, dim, keepdim);
  at::amax_out(max, self, dim, keepdim);
}

void aminmax_allreduce_mlu(const at::Tensor& self, at::Tensor& min, at::Tensor& max) {
  at::amin_out(min, self, {}, false);
  at::amax_out(max, self, {}, false);
}

// The CPU's isin_default_kernel_cpu, which at::native's isin runs when
// test_elements is small (numpy's heuristic; larger ones sort, with ops mlu
// has): each element compared with every test element, in their common type.
void isin_default_mlu(const at::Tensor& elements, const at::Tensor& test_elements, bool invert, const at::Tensor& out) {
  const at::ScalarType common = at::result_type(elements, test_elements);
  const at::Tensor found = elements.to(common).unsqueeze(-1).eq(test_elements.to(common).reshape(-1)).any(-1);
  out.copy_(invert ? found.logical_not() : found);
}

// renorm_: PyTorch's meta and impl into self (impl: native registers the functional and out= forms).
at::Tensor& renorm_inplace_mlu(at::Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  MLUInplace<at::native::structured_renorm_out> op(self);
  op.meta(self, p, dim, maxnorm);
  op.impl(self, p, dim, maxnorm, self);
  return self;
}

}  // namespace
}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(index_fill_stub, &torch_mlu::index_fill_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(take_stub, &torch_mlu::take_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(put_stub, &torch_mlu::put_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(cross_stub, &torch_mlu::cross_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(renorm_scale_factor_stub, &torch_mlu::renorm_scale_factor_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(aminmax_stub, &torch_mlu::aminmax_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(aminmax_allreduce_stub, &torch_mlu::aminmax_allreduce_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(isin_default_stub, &torch_mlu::isin_default_mlu)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/NativeStubOps.inc"
