#include "mlu_kernels/select.h"

#include "convert.h"
#include "dispatch.h"

namespace mlu::kernels {

namespace {

// Calls f(linear, offset_a, offset_b) for every element in row-major order.
template <class F>
void walk(const Shape& shape, const Strides& a, const Strides& b, F&& f) {
  const int64_t n = numel(shape);
  int64_t index[kMaxDims] = {};
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(index, oa, ob);
    for (int d = shape.ndim - 1; d >= 0; --d) {
      oa += a.v[d];
      ob += b.v[d];
      if (++index[d] < shape.sizes[d]) break;
      oa -= a.v[d] * shape.sizes[d];
      ob -= b.v[d] * shape.sizes[d];
      index[d] = 0;
    }
  }
}

template <class F>
void with_truth(const Operand& in, F&& f) {
  detail::dispatch(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(in.data);
    f([p](int64_t offset) { return detail::convert<bool>(p[offset]); });
  });
}

}  // namespace

int64_t count_nonzero(const Shape& shape, const Operand& in) {
  int64_t count = 0;
  with_truth(in, [&](auto truth) {
    walk(shape, in.strides, in.strides, [&](const int64_t*, int64_t o, int64_t) { count += truth(o) ? 1 : 0; });
  });
  return count;
}

void nonzero(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col) {
  int64_t row = 0;
  with_truth(in, [&](auto truth) {
    walk(shape, in.strides, in.strides, [&](const int64_t* index, int64_t o, int64_t) {
      if (!truth(o)) return;
      for (int d = 0; d < shape.ndim; ++d) out[row * out_row + d * out_col] = index[d];
      ++row;
    });
  });
}

void masked_select(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out) {
  int64_t written = 0;
  const int64_t stride = out.strides.v[0];
  with_truth(mask, [&](auto truth) {
    detail::dispatch_bits(element_size(in.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(in.data);
      T* dst = static_cast<T*>(out.data);
      walk(shape, in.strides, mask.strides, [&](const int64_t*, int64_t oi, int64_t om) {
        if (truth(om)) dst[stride * written++] = src[oi];
      });
    });
  });
}

}  // namespace mlu::kernels
