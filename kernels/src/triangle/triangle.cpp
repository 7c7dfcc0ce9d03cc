#include "mlu_kernels/triangle.h"

#include <algorithm>

#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/unravel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

void triangle(const Shape& shape, const Operand& out, const Operand& in, int64_t diagonal, bool lower) {
  detail::VerboseCall call("triangle");
  if (call) call.describe(in.dtype, "n%lld diagonal%lld", detail::lld(numel(shape)), detail::lld(diagonal));
  call.path(lower ? "tril" : "triu");
  const int rdim = shape.ndim - 2, cdim = shape.ndim - 1;
  const int64_t rows = shape.sizes[rdim], cols = shape.sizes[cdim];
  Shape batch;
  batch.ndim = rdim;
  for (int d = 0; d < rdim; ++d) batch.sizes[d] = shape.sizes[d];
  const int64_t n_rows = numel(batch) * rows;
  if (n_rows == 0 || cols == 0) return;
  const int64_t ro = out.strides.v[rdim], co = out.strides.v[cdim];
  const int64_t ri = in.strides.v[rdim], ci = in.strides.v[cdim];
  detail::dispatch_bits(element_size(out.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.data);
    const T* src = static_cast<const T*>(in.data);
    parallel_for(0, n_rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t i = r % rows, m = r / rows;
        T* d = dst + detail::unravel_offset(m, batch, out.strides) + i * ro;
        const T* s = src + detail::unravel_offset(m, batch, in.strides) + i * ri;
        // Kept columns [keep_begin, keep_end); the rest become zero bits (0
        // in every dtype).
        const int64_t keep_begin = lower ? 0 : std::clamp<int64_t>(i + diagonal, 0, cols);
        const int64_t keep_end = lower ? std::clamp<int64_t>(i + diagonal + 1, 0, cols) : cols;
        for (int64_t j = 0; j < keep_begin; ++j) d[j * co] = T{};
        for (int64_t j = keep_begin; j < keep_end; ++j) d[j * co] = s[j * ci];
        for (int64_t j = keep_end; j < cols; ++j) d[j * co] = T{};
      }
    });
  });
}

}  // namespace mlu::kernels
