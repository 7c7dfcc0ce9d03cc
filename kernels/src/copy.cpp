#include "mlu_kernels/copy.h"

#include <cstring>

#include "convert.h"
#include "dispatch.h"
#include "strided_loop.h"
#include "mlu_kernels/parallel.h"
#include "unravel.h"

namespace mlu::kernels {

namespace {

constexpr int64_t kCopyGrain = 65536;  // elements per parallel chunk, at least

template <class To, class From>
void copy_contiguous(To* __restrict dst, const From* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert<To>(src[i]);
}

template <class To, class From>
void copy_strided(To* dst, const Strides& dst_strides, const From* src,
                  const Strides& src_strides, const Shape& shape) {
  const int last = shape.ndim - 1;
  const int64_t n = shape.sizes[last];
  const int64_t ds = dst_strides.v[last];
  const int64_t ss = src_strides.v[last];
  const Strides* operands[2] = {&dst_strides, &src_strides};
  detail::for_each_row(shape, operands, [&](const int64_t* offsets) {
    To* d = dst + offsets[0];
    const From* s = src + offsets[1];
    if (ds == 1 && ss == 1) {
      copy_contiguous(d, s, n);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * ds] = detail::convert<To>(s[i * ss]);
    }
  });
}

// Calls f(To tag, From tag). Equal types are moved as opaque bits, so a copy
// within one dtype is exact (NaN payloads included) and instantiated once per size.
template <class F>
void dispatch_pair(ScalarType dst_type, ScalarType src_type, F&& f) {
  if (dst_type == src_type) {
    detail::dispatch_bits(element_size(dst_type), [&](auto tag) { f(tag, tag); });
    return;
  }
  detail::dispatch(dst_type, [&](auto to) {
    detail::dispatch(src_type, [&](auto from) { f(to, from); });
  });
}

}  // namespace

void copy(void* dst, ScalarType dst_type, const Strides& dst_strides, const void* src,
          ScalarType src_type, const Strides& src_strides, const Shape& shape) {
  Shape s = shape;
  Strides ds = dst_strides;
  Strides ss = src_strides;
  Strides* operands[] = {&ds, &ss};
  sort_dims_by_stride(s, operands, 2);
  coalesce(s, operands, 2);
  const int64_t n = numel(s);
  if (n == 0) return;
  const bool contiguous = s.ndim == 0 || (s.ndim == 1 && ds.v[0] == 1 && ss.v[0] == 1);
  // Copies of disjoint parts are independent: contiguous copies split the
  // element range, strided ones the outermost dim, over the compute threads.
  if (contiguous && dst_type == src_type) {
    const size_t size = element_size(dst_type);
    parallel_for(0, n, kCopyGrain, [&](int64_t b, int64_t e) {
      std::memcpy(static_cast<char*>(dst) + b * static_cast<int64_t>(size),
                  static_cast<const char*>(src) + b * static_cast<int64_t>(size), static_cast<size_t>(e - b) * size);
    });
    return;
  }
  dispatch_pair(dst_type, src_type, [&](auto to, auto from) {
    using To = typename decltype(to)::type;
    using From = typename decltype(from)::type;
    auto* d = static_cast<To*>(dst);
    const auto* sp = static_cast<const From*>(src);
    if (contiguous) {
      parallel_for(0, n, kCopyGrain, [&](int64_t b, int64_t e) { copy_contiguous(d + b, sp + b, e - b); });
      return;
    }
    const int64_t inner = n / s.sizes[0];
    parallel_for(0, s.sizes[0], std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
                   Shape part = s;
                   part.sizes[0] = e - b;
                   copy_strided(d + b * ds.v[0], ds, sp + b * ss.v[0], ss, part);
                 });
  });
}

void copy_ref(void* dst, ScalarType dst_type, const Strides& dst_strides, const void* src,
              ScalarType src_type, const Strides& src_strides, const Shape& shape) {
  const int64_t n = numel(shape);
  detail::dispatch(dst_type, [&](auto to) {
    detail::dispatch(src_type, [&](auto from) {
      using To = typename decltype(to)::type;
      using From = typename decltype(from)::type;
      for (int64_t i = 0; i < n; ++i) {
        const From* s = static_cast<const From*>(src) + detail::unravel_offset(i, shape, src_strides);
        To* d = static_cast<To*>(dst) + detail::unravel_offset(i, shape, dst_strides);
        *d = detail::convert<To>(*s);
      }
    });
  });
}

}  // namespace mlu::kernels
