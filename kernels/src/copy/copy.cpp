#include "mlu_kernels/copy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <type_traits>

#include "../common/convert.h"
#include "copy_table.h"
#include "../common/dispatch.h"
#include "../common/strided_loop.h"
#include "mlu_kernels/parallel.h"
#include "mlu_kernels/pointwise.h"
#include "../common/unravel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

constexpr int64_t kCopyGrain = 65536;  // elements per parallel chunk, at least
constexpr int64_t kTile = 32;

const detail::CopyKernels& active_kernels() { return MLU_KERNELS_ACTIVE_ISA_VARIANT(copy_kernels)(); }

// The active ISA's register transpose for T's size (copy_table.h), if any.
template <class T>
detail::TransposeBlock<T> transpose_block() {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return active_kernels().transpose16;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return active_kernels().transpose32;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return active_kernels().transpose64;
  } else {
    return {};
  }
}

// d[i * da + j * db] = s[i * sa + j * sb] over [a0, a1) x [b0, b1).
template <class T>
void copy_tile_scalar(T* d, int64_t da, int64_t db, const T* s, int64_t sa, int64_t sb, int64_t a0, int64_t a1,
                      int64_t b0, int64_t b1) {
  for (int64_t i = a0; i < a1; ++i) {
    for (int64_t j = b0; j < b1; ++j) d[i * da + j * db] = s[i * sa + j * sb];
  }
}

// Note [Blocked transposing copies]
// A copy whose operands have their unit strides on different dims (e.g.
// x.t().contiguous(), a flip of a transposed view) reads or writes with a
// large stride in any loop order. It runs in strips of kTile along `a` (the
// source's unit-stride dim) over the whole of `b` (the destination's). When
// both unit strides are +1 and the element size has a register transpose,
// a strip is done in square blocks, each read as whole source rows and
// written as whole destination rows, so every cache line of a block is
// touched once (with power-of-two row pitches, as in 1024 x 1024, a 32-row
// tile of scalar copies has its lines in one L1 set and evicts them before
// their other elements are used). The block's edges, and copies with a -1
// unit stride, run the scalar tile loop. The register transposes are per ISA
// (register_transpose.h, compiled in copy_isa.cpp, picked through
// copy_table.h): blocks of 16 x 16 4-byte and 8 x 8 8-byte elements with
// AVX-512, 8 x 8 and 4 x 4 with AVX2, 16 x 16 2-byte elements with either,
// none in the baseline. (What the blocks gained over the scalar tiles, per
// ISA, and against PyTorch's CPU copy, as measured when they were written:
// docs/bench_kernels.md.)
template <class T>
void copy_tiled(T* dst, const Strides& ds, const T* src, const Strides& ss, const Shape& shape, int a, int b) {
  Shape outer;
  outer.ndim = 0;
  Strides outer_d{}, outer_s{};
  for (int d = 0; d < shape.ndim; ++d) {
    if (d == a || d == b) continue;
    outer.sizes[outer.ndim] = shape.sizes[d];
    outer_d.v[outer.ndim] = ds.v[d];
    outer_s.v[outer.ndim] = ss.v[d];
    ++outer.ndim;
  }
  const int64_t rows = shape.sizes[a], cols = shape.sizes[b];
  const int64_t tiles = (rows + kTile - 1) / kTile;
  const int64_t da = ds.v[a], db = ds.v[b], sa = ss.v[a], sb = ss.v[b];
  const detail::TransposeBlock<T> block = sa == 1 && db == 1 ? transpose_block<T>() : detail::TransposeBlock<T>{};
  parallel_for(0, numel(outer) * tiles, std::max<int64_t>(1, kCopyGrain / (kTile * cols)), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / tiles;
      T* d = dst + detail::unravel_offset(o, outer, outer_d);
      const T* s = src + detail::unravel_offset(o, outer, outer_s);
      const int64_t a0 = (t % tiles) * kTile, a1 = std::min(a0 + kTile, rows);
      int64_t a_blocked = a0, b_blocked = 0;  // ends of the part done in blocks
      if (block.size > 0) {
        a_blocked = a0 + (a1 - a0) / block.size * block.size;
        b_blocked = cols / block.size * block.size;
        for (int64_t j = 0; j < b_blocked; j += block.size) {
          for (int64_t i = a0; i < a_blocked; i += block.size) block.run(d + i * da + j, da, s + i + j * sb, sb);
        }
      }
      for (int64_t b0 = 0; b0 < cols; b0 += kTile) {
        const int64_t b1 = std::min(b0 + kTile, cols);
        copy_tile_scalar(d, da, db, s, sa, sb, a_blocked, a1, b0, b1);
        copy_tile_scalar(d, da, db, s, sa, sb, a0, a_blocked, std::max(b0, b_blocked), b1);
      }
    }
  });
}

// The dim where `strides` is +-1 (and the size above 1), if any.
int unit_dim(const Shape& shape, const Strides& strides) {
  for (int d = shape.ndim - 1; d >= 0; --d) {
    if (shape.sizes[d] > 1 && (strides.v[d] == 1 || strides.v[d] == -1)) return d;
  }
  return -1;
}

// The compute type that makes the pointwise engine's Copy op a conversion
// from `from` to `to` with convert<To>'s result (Float16/BFloat16 go through
// float, as c10 converts them; so do the Float8 types), or nothing for
// complex types.
std::optional<ScalarType> conversion_compute(ScalarType to, ScalarType from) {
  const auto complex = [](ScalarType t) { return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble; };
  if (complex(to) || complex(from)) return std::nullopt;
  if (to == ScalarType::Float16 || to == ScalarType::BFloat16 || is_float8(to)) return ScalarType::Float32;
  return to;
}

template <class To, class From>
void copy_contiguous(To* __restrict dst, const From* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert<To>(src[i]);
}

// The active ISA's reversed row copy (copy_isa.cpp) for the element types
// dispatch_pair picks: bits for equal dtypes, else the converting pair.
detail::ReversedRow reversed_row(ScalarType to, ScalarType from) {
  const detail::CopyKernels& kernels = active_kernels();
  if (to == from) return kernels.reversed_bits[std::countr_zero(element_size(to))];
  return kernels.reversed[static_cast<int>(to)][static_cast<int>(from)];
}

// `reversed` copies the rows of a flip along the innermost dim (reversed_row).
template <class To, class From>
void copy_strided(To* dst, const Strides& dst_strides, const From* src,
                  const Strides& src_strides, const Shape& shape, detail::ReversedRow reversed) {
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
    } else if (ds == 1 && ss == -1) {
      reversed(d, s, n);
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
  detail::dispatch_convertible(
      dst_type, [&](auto to) { detail::dispatch_convertible(src_type, [&](auto from) { f(to, from); }); });
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
  detail::VerboseCall call("copy", detail::VerboseCall::Nested::Quiet);
  if (call) call.describe(src_type, "n%lld to %s", detail::lld(n), scalar_type_name(dst_type));
  const bool contiguous = s.ndim == 0 || (s.ndim == 1 && ds.v[0] == 1 && ss.v[0] == 1);
  // Copies of disjoint parts are independent: contiguous copies split the
  // element range, strided ones the outermost dim, over the compute threads.
  if (contiguous && dst_type == src_type) {
    call.path("memcpy");
    const size_t size = element_size(dst_type);
    parallel_for(0, n, kCopyGrain, [&](int64_t b, int64_t e) {
      std::memcpy(static_cast<char*>(dst) + b * static_cast<int64_t>(size),
                  static_cast<const char*>(src) + b * static_cast<int64_t>(size), static_cast<size_t>(e - b) * size);
    });
    return;
  }
  if (dst_type == src_type && s.ndim >= 2) {
    const int a = unit_dim(s, ss), b = unit_dim(s, ds);
    if (a >= 0 && b >= 0 && a != b && s.sizes[a] >= kTile / 2 && s.sizes[b] >= kTile / 2) {
      call.path("tiled");
      detail::dispatch_bits(element_size(dst_type), [&](auto tag) {
        using T = typename decltype(tag)::type;
        copy_tiled(static_cast<T*>(dst), ds, static_cast<const T*>(src), ss, s, a, b);
      });
      return;
    }
  }
  if (const std::optional<ScalarType> compute = conversion_compute(dst_type, src_type);
      dst_type != src_type && compute.has_value()) {
    // Vectorised per ISA, converting while it loads and stores.
    call.path("pointwise");
    const Operand operands[2] = {{dst, dst_type, ds}, {const_cast<void*>(src), src_type, ss}};
    pointwise(PointwiseOp::Copy, *compute, s, operands, OpParams{});
    return;
  }
  call.path(contiguous ? "contiguous" : "strided");
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
    const detail::ReversedRow reversed = reversed_row(dst_type, src_type);
    parallel_for(0, s.sizes[0], std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
                   Shape part = s;
                   part.sizes[0] = e - b;
                   copy_strided(d + b * ds.v[0], ds, sp + b * ss.v[0], ss, part, reversed);
                 });
  });
}

void copy_ref(void* dst, ScalarType dst_type, const Strides& dst_strides, const void* src,
              ScalarType src_type, const Strides& src_strides, const Shape& shape) {
  const int64_t n = numel(shape);
  detail::dispatch_convertible(dst_type, [&](auto to) {
    detail::dispatch_convertible(src_type, [&](auto from) {
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
