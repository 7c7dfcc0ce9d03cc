#include "mlu_kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../convert.h"
#include "../dispatch.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "rows.h"

namespace mlu::kernels {
namespace {

const detail::SoftmaxRows& active_rows() {
  switch (active_isa()) {
    case Isa::Avx512: return isa_avx512::softmax_rows();
    case Isa::Avx2: return isa_avx2::softmax_rows();
    case Isa::Baseline: break;
  }
  return isa_baseline::softmax_rows();
}

// The rows of `shape` along `dim`: `rest` indexes them, each operand's row
// starts at unravel(r, rest, strides[k]) and steps by step[k].
struct RowLayout {
  Shape rest;
  Strides strides[3];
  int64_t step[3] = {};
  int64_t len = 1;
};

RowLayout row_layout(const Shape& shape, int dim, const Operand* const* ops, int n_ops) {
  RowLayout layout;
  layout.rest.ndim = 0;
  if (shape.ndim > 0) layout.len = shape.sizes[dim];
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == dim) continue;
    const int r = layout.rest.ndim++;
    layout.rest.sizes[r] = shape.sizes[d];
    for (int k = 0; k < n_ops; ++k) layout.strides[k].v[r] = ops[k]->strides.v[d];
  }
  for (int k = 0; k < n_ops; ++k) layout.step[k] = shape.ndim > 0 ? ops[k]->strides.v[dim] : 1;
  return layout;
}

int64_t row_offset(int64_t r, const Shape& rest, const Strides& strides) {
  int64_t offset = 0;
  for (int d = rest.ndim - 1; d >= 0; --d) {
    offset += (r % rest.sizes[d]) * strides.v[d];
    r /= rest.sizes[d];
  }
  return offset;
}

// Row element i of `op` as the compute type T, and back.
template <class T>
void load_row(T* dst, const Operand& op, int64_t offset, int64_t step, int64_t len) {
  detail::dispatch(op.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<S> || std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
      const S* src = static_cast<const S*>(op.data) + offset;
      for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<T>(detail::widen(src[i * step]));
    }
  });
}

template <class T>
void store_row(const Operand& op, int64_t offset, int64_t step, const T* src, int64_t len) {
  detail::dispatch(op.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<D> || std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
      D* dst = static_cast<D*>(op.data) + offset;
      for (int64_t i = 0; i < len; ++i) dst[i * step] = detail::convert<D>(src[i]);
    }
  });
}

template <class T>
constexpr ScalarType kCompute = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;

// Runs `row(ptrs...)` on every row: in place on an operand that is already a
// contiguous row of T, through a per-thread buffer otherwise. Operand 0 is
// written, the others read.
template <class T, int N, class Row>
void for_each_row(const Shape& shape, int dim, const Operand* const (&ops)[N], Row&& row) {
  const RowLayout layout = row_layout(shape, dim, ops, N);
  const int64_t rows = numel(layout.rest), len = layout.len;
  if (rows == 0 || len == 0) return;
  bool direct[N];
  for (int k = 0; k < N; ++k) direct[k] = ops[k]->dtype == kCompute<T> && (layout.step[k] == 1 || len == 1);
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / len), [&](int64_t begin, int64_t end) {
    std::vector<T> buffers[N];
    for (int k = 0; k < N; ++k) {
      if (!direct[k]) buffers[k].resize(static_cast<size_t>(len));
    }
    for (int64_t r = begin; r < end; ++r) {
      T* ptr[N];
      int64_t offset[N];
      for (int k = 0; k < N; ++k) {
        offset[k] = row_offset(r, layout.rest, layout.strides[k]);
        if (direct[k]) {
          ptr[k] = static_cast<T*>(ops[k]->data) + offset[k];
        } else {
          ptr[k] = buffers[k].data();
          if (k > 0) load_row(ptr[k], *ops[k], offset[k], layout.step[k], len);
        }
      }
      row(ptr, len);
      if (!direct[0]) store_row(*ops[0], offset[0], layout.step[0], ptr[0], len);
    }
  });
}

template <class T>
const detail::SoftmaxRowFns<T>& row_fns() {
  if constexpr (std::is_same_v<T, double>) {
    return active_rows().d;
  } else {
    return active_rows().f;
  }
}

template <class F>
void dispatch_compute(ScalarType out, ScalarType in, F&& f) {
  if (out == ScalarType::Float64 || in == ScalarType::Float64) {
    f(std::type_identity<double>{});
  } else {
    f(std::type_identity<float>{});
  }
}

}  // namespace

void softmax(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log) {
  const Operand* ops[2] = {&out, &in};
  dispatch_compute(out.dtype, in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto forward = row_fns<T>().forward;
    for_each_row<T, 2>(shape, dim, ops, [&](T* const* p, int64_t len) { forward(p[0], p[1], len, log); });
  });
}

void softmax_backward(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                      const Operand& output, bool log) {
  const Operand* ops[3] = {&grad_input, &grad, &output};
  dispatch_compute(grad_input.dtype, output.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto backward = row_fns<T>().backward;
    for_each_row<T, 3>(shape, dim, ops, [&](T* const* p, int64_t len) { backward(p[0], p[1], p[2], len, log); });
  });
}

void softmax_ref(const Shape& shape, int dim, const Operand& out, const Operand& in, bool log) {
  const Operand* ops[2] = {&out, &in};
  dispatch_compute(out.dtype, in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<T, 2>(shape, dim, ops, [&](T* const* p, int64_t len) {
      T max = -std::numeric_limits<T>::infinity();
      bool nan = false;
      for (int64_t i = 0; i < len; ++i) {
        max = std::max(max, p[1][i]);
        nan |= std::isnan(p[1][i]);
      }
      if (nan) max = std::numeric_limits<T>::quiet_NaN();
      long double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += std::exp(static_cast<long double>(p[1][i] - max));
      for (int64_t i = 0; i < len; ++i) {
        const long double shifted = static_cast<long double>(p[1][i] - max);
        p[0][i] = static_cast<T>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    });
  });
}

void softmax_backward_ref(const Shape& shape, int dim, const Operand& grad_input, const Operand& grad,
                          const Operand& output, bool log) {
  const Operand* ops[3] = {&grad_input, &grad, &output};
  dispatch_compute(grad_input.dtype, output.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_row<T, 3>(shape, dim, ops, [&](T* const* p, int64_t len) {
      long double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += log ? p[1][i] : static_cast<long double>(p[1][i]) * p[2][i];
      for (int64_t i = 0; i < len; ++i) {
        const long double g = p[1][i], o = p[2][i];
        p[0][i] = static_cast<T>(log ? g - std::exp(o) * sum : o * (g - sum));
      }
    });
  });
}

}  // namespace mlu::kernels
