#include "mlu_kernels/select.h"

#include <algorithm>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

// Calls f(index, offset_a, offset_b, len) for the row segments of the
// elements [begin, end) of the row-major order of `shape`: `len` elements
// along the last dim from coordinates `index` (a 0-dim shape is one segment
// of one element, with no coordinates).
template <class F>
void walk_rows(const Shape& shape, const Strides& a, const Strides& b, int64_t begin, int64_t end, F&& f) {
  int64_t index[kMaxDims] = {};
  if (shape.ndim == 0) {
    if (begin < end) f(static_cast<const int64_t*>(index), int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  const int last = shape.ndim - 1;
  int64_t oa = 0, ob = 0;
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % shape.sizes[d];
    rest /= shape.sizes[d];
    oa += index[d] * a.v[d];
    ob += index[d] * b.v[d];
  }
  int64_t remaining = end - begin;
  while (remaining > 0) {
    const int64_t len = std::min(shape.sizes[last] - index[last], remaining);
    f(static_cast<const int64_t*>(index), oa, ob, len);
    remaining -= len;
    if (remaining == 0) return;
    // Back to the start of the row, then the outer dims odometer style.
    oa -= index[last] * a.v[last];
    ob -= index[last] * b.v[last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      oa += a.v[d];
      ob += b.v[d];
      if (++index[d] < shape.sizes[d]) break;
      oa -= a.v[d] * shape.sizes[d];
      ob -= b.v[d] * shape.sizes[d];
      index[d] = 0;
    }
  }
}

// Calls f(truth) with truth(offset) = (in[offset] != 0), as 0 or 1. Bool
// reads as bytes (GCC vectorises byte loads, not bool ones).
template <class F>
void with_truth(const Operand& in, F&& f) {
  detail::dispatch(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      const auto* p = static_cast<const uint8_t*>(in.data);
      f([p](int64_t offset) { return static_cast<int64_t>(p[offset] != 0); });
    } else {
      const T* p = static_cast<const T*>(in.data);
      f([p](int64_t offset) { return static_cast<int64_t>(detail::convert<bool>(p[offset])); });
    }
  });
}

// Note [Two-pass compaction]
// The element range splits into fixed chunks (their bounds depend only on the
// size and the thread count). Pass one counts the selected elements of every
// chunk in parallel; an exclusive prefix sum gives each chunk its first output
// position; pass two writes every chunk in parallel. The output is in
// row-major order, as with one serial pass.
struct Chunks {
  int64_t n;
  int64_t count;
  int64_t begin(int64_t c) const { return n * c / count; }
};

Chunks chunks_of(int64_t n) {
  const int64_t most = static_cast<int64_t>(num_threads()) * 4;
  return {n, std::clamp<int64_t>(n / 16384, 1, most)};
}

// Per chunk, the number of elements whose `truth` holds (mask operand `m`).
template <class Truth>
std::vector<int64_t> count_chunks(const Shape& shape, const Strides& m, const Chunks& chunks, const Truth& truth) {
  std::vector<int64_t> counts(static_cast<size_t>(chunks.count), 0);
  const int64_t step = shape.ndim > 0 ? m.v[shape.ndim - 1] : 0;
  parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t count = 0;
      walk_rows(shape, m, m, chunks.begin(c), chunks.begin(c + 1), [&](const int64_t*, int64_t o, int64_t, int64_t len) {
        if (step == 1) {
          for (int64_t j = 0; j < len; ++j) count += truth(o + j);
        } else {
          for (int64_t j = 0; j < len; ++j) count += truth(o + j * step);
        }
      });
      counts[static_cast<size_t>(c)] = count;
    }
  });
  return counts;
}

// Chunk counts -> row bounds: chunk c writes rows [bounds[c], bounds[c + 1]).
std::vector<int64_t> row_bounds(const std::vector<int64_t>& counts) {
  std::vector<int64_t> bounds(counts.size() + 1, 0);
  for (size_t c = 0; c < counts.size(); ++c) bounds[c + 1] = bounds[c] + counts[c];
  return bounds;
}

}  // namespace

int64_t count_nonzero(const Shape& shape, const Operand& in) {
  detail::VerboseCall call("count_nonzero");
  if (call) call.describe(in.dtype, "n%lld", detail::lld(numel(shape)));
  const int64_t n = numel(shape);
  if (n == 0) return 0;
  int64_t total = 0;
  with_truth(in, [&](auto truth) {
    for (int64_t c : count_chunks(shape, in.strides, chunks_of(n), truth)) total += c;
  });
  return total;
}

// Note [Branch-free compaction]
// Pass two writes every element's output (coordinates, or the value) at the
// next free row and advances the row by its truth (0 or 1): no branch on the
// data, which mispredicted half the time on random masks. A false element's
// write is overwritten by the next true one; a chunk stops once its rows are
// all written, so nothing lands past its last row (or the output's end).
void nonzero(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col) {
  detail::VerboseCall call("nonzero");
  if (call) call.describe(in.dtype, "n%lld", detail::lld(numel(shape)));
  const int64_t n = numel(shape);
  if (n == 0) return;
  const Chunks chunks = chunks_of(n);
  const int last = shape.ndim - 1;
  const int64_t step = shape.ndim > 0 ? in.strides.v[last] : 0;
  with_truth(in, [&](auto truth) {
    const std::vector<int64_t> bounds = row_bounds(count_chunks(shape, in.strides, chunks, truth));
    parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t row = bounds[static_cast<size_t>(c)];
        const int64_t end_row = bounds[static_cast<size_t>(c + 1)];
        walk_rows(shape, in.strides, in.strides, chunks.begin(c), chunks.begin(c + 1),
                  [&](const int64_t* index, int64_t o, int64_t, int64_t len) {
                    if (last < 0) return;  // a 0-dim input: a row with no coordinates
                    if (last == 1 && out_col == 1 && step == 1) {  // a contiguous matrix into a dense output
                      const int64_t i0 = index[0], i1 = index[1];
                      for (int64_t j = 0; j < len && row < end_row; ++j) {
                        int64_t* at = out + row * out_row;
                        at[0] = i0;
                        at[1] = i1 + j;
                        row += truth(o + j);
                      }
                      return;
                    }
                    for (int64_t j = 0; j < len && row < end_row; ++j) {
                      int64_t* at = out + row * out_row;
                      for (int d = 0; d < last; ++d) at[d * out_col] = index[d];
                      at[last * out_col] = index[last] + j;
                      row += truth(o + j * step);
                    }
                  });
      }
    });
  });
}

void masked_select(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out) {
  detail::VerboseCall call("masked_select");
  if (call) call.describe(in.dtype, "n%lld", detail::lld(numel(shape)));
  const int64_t n = numel(shape);
  if (n == 0) return;
  const Chunks chunks = chunks_of(n);
  const int64_t stride = out.strides.v[0];
  const int last = shape.ndim - 1;
  const int64_t in_step = last >= 0 ? in.strides.v[last] : 0, mask_step = last >= 0 ? mask.strides.v[last] : 0;
  with_truth(mask, [&](auto truth) {
    const std::vector<int64_t> bounds = row_bounds(count_chunks(shape, mask.strides, chunks, truth));
    detail::dispatch_bits(element_size(in.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(in.data);
      T* dst = static_cast<T*>(out.data);
      parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t written = bounds[static_cast<size_t>(c)];
          const int64_t end = bounds[static_cast<size_t>(c + 1)];
          walk_rows(shape, in.strides, mask.strides, chunks.begin(c), chunks.begin(c + 1),
                    [&](const int64_t*, int64_t oi, int64_t om, int64_t len) {
                      // Note [Branch-free compaction]
                      for (int64_t j = 0; j < len && written < end; ++j) {
                        dst[stride * written] = src[oi + j * in_step];
                        written += truth(om + j * mask_step);
                      }
                    });
        }
      });
    });
  });
}

}  // namespace mlu::kernels
