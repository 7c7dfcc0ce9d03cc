#include "mlu_kernels/sparse.h"

#include <algorithm>

#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "sparse_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

template <class T>
T cast_alpha(std::complex<double> alpha) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(alpha.real());
  } else {
    return T(static_cast<typename T::value_type>(alpha.real()), static_cast<typename T::value_type>(alpha.imag()));
  }
}

template <class F>
void dispatch_spmm(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::Float32: f(std::type_identity<float>{}); break;
    case ScalarType::Float64: f(std::type_identity<double>{}); break;
    case ScalarType::ComplexFloat: f(std::type_identity<std::complex<float>>{}); break;
    case ScalarType::ComplexDouble: f(std::type_identity<std::complex<double>>{}); break;
    default: break;
  }
}

// Rows [begin, end) of a complex product (the real types run sparse_isa.cpp's
// vectorised copy of this loop).
template <class T>
void complex_spmm_rows(const SpmmArgs& a, int64_t begin, int64_t end) {
  const T alpha = cast_alpha<T>(a.alpha);
  const T* values = static_cast<const T*>(a.values);
  const T* dense = static_cast<const T*>(a.dense);
  T* out = static_cast<T*>(a.out);
  for (int64_t i = begin; i < end; ++i) {
    T* row = out + i * a.out_stride0;
    for (int64_t p = a.crow[i]; p < a.crow[i + 1]; ++p) {
      const T scale = alpha * values[p];
      const T* source = dense + a.cols[p] * a.dense_stride0;
      if (a.out_stride1 == 1 && a.dense_stride1 == 1) {
        for (int64_t j = 0; j < a.n; ++j) row[j] += scale * source[j];
      } else {
        for (int64_t j = 0; j < a.n; ++j) row[j * a.out_stride1] += scale * source[j * a.dense_stride1];
      }
    }
  }
}

}  // namespace

bool spmm_takes(ScalarType type) {
  return type == ScalarType::Float32 || type == ScalarType::Float64 || type == ScalarType::ComplexFloat ||
         type == ScalarType::ComplexDouble;
}

void spmm_csr(const SpmmArgs& a) {
  detail::VerboseCall call("spmm_csr");
  if (call) call.describe(a.type, "rows%lld n%lld", detail::lld(a.rows), detail::lld(a.n));
  if (a.rows == 0 || a.n == 0 || !spmm_takes(a.type)) return;
  const int64_t nnz = a.crow[a.rows] - a.crow[0];
  // About 32K multiply-adds per chunk.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) * a.rows / std::max<int64_t>(1, nnz * a.n));
  const detail::SpmmTable& table = MLU_KERNELS_ACTIVE_ISA_VARIANT(spmm_table)();
  detail::SpmmRows rows = a.type == ScalarType::Float32   ? table.f32
                          : a.type == ScalarType::Float64 ? table.f64
                          : a.type == ScalarType::ComplexFloat ? &complex_spmm_rows<std::complex<float>>
                                                              : &complex_spmm_rows<std::complex<double>>;
  parallel_for(0, a.rows, grain, [&](int64_t begin, int64_t end) { rows(a, begin, end); });
}

void spmm_csr_ref(const SpmmArgs& a) {
  dispatch_spmm(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T alpha = cast_alpha<T>(a.alpha);
    const T* values = static_cast<const T*>(a.values);
    const T* dense = static_cast<const T*>(a.dense);
    T* out = static_cast<T*>(a.out);
    for (int64_t i = 0; i < a.rows; ++i) {
      for (int64_t j = 0; j < a.n; ++j) {
        T& element = out[i * a.out_stride0 + j * a.out_stride1];
        for (int64_t p = a.crow[i]; p < a.crow[i + 1]; ++p) {
          element += (alpha * values[p]) * dense[a.cols[p] * a.dense_stride0 + j * a.dense_stride1];
        }
      }
    }
  });
}

}  // namespace mlu::kernels
