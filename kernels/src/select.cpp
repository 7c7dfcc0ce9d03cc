#include "mlu_kernels/select.h"

#include <algorithm>
#include <vector>

#include "convert.h"
#include "dispatch.h"
#include "mlu_kernels/parallel.h"

namespace mlu::kernels {

namespace {

// Calls f(index, offset_a, offset_b) for the elements [begin, end) of the
// row-major order of `shape`, index being the element's coordinates.
template <class F>
void walk(const Shape& shape, const Strides& a, const Strides& b, int64_t begin, int64_t end, F&& f) {
  int64_t index[kMaxDims] = {};
  int64_t oa = 0, ob = 0;
  int64_t rest = begin;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    index[d] = rest % shape.sizes[d];
    rest /= shape.sizes[d];
    oa += index[d] * a.v[d];
    ob += index[d] * b.v[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(static_cast<const int64_t*>(index), oa, ob);
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
  return {n, std::clamp<int64_t>(n / 65536, 1, most)};
}

// Per chunk, the number of elements whose `truth` holds (mask operand `m`).
template <class Truth>
std::vector<int64_t> count_chunks(const Shape& shape, const Strides& m, const Chunks& chunks, const Truth& truth) {
  std::vector<int64_t> counts(static_cast<size_t>(chunks.count), 0);
  parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t count = 0;
      walk(shape, m, m, chunks.begin(c), chunks.begin(c + 1),
           [&](const int64_t*, int64_t o, int64_t) { count += truth(o) ? 1 : 0; });
      counts[static_cast<size_t>(c)] = count;
    }
  });
  return counts;
}

// counts -> each chunk's first output position.
void exclusive_prefix(std::vector<int64_t>& counts) {
  int64_t sum = 0;
  for (int64_t& c : counts) {
    const int64_t v = c;
    c = sum;
    sum += v;
  }
}

}  // namespace

int64_t count_nonzero(const Shape& shape, const Operand& in) {
  const int64_t n = numel(shape);
  if (n == 0) return 0;
  int64_t total = 0;
  with_truth(in, [&](auto truth) {
    for (int64_t c : count_chunks(shape, in.strides, chunks_of(n), truth)) total += c;
  });
  return total;
}

void nonzero(const Shape& shape, const Operand& in, int64_t* out, int64_t out_row, int64_t out_col) {
  const int64_t n = numel(shape);
  if (n == 0) return;
  const Chunks chunks = chunks_of(n);
  with_truth(in, [&](auto truth) {
    std::vector<int64_t> first = count_chunks(shape, in.strides, chunks, truth);
    exclusive_prefix(first);
    parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t row = first[static_cast<size_t>(c)];
        walk(shape, in.strides, in.strides, chunks.begin(c), chunks.begin(c + 1),
             [&](const int64_t* index, int64_t o, int64_t) {
               if (!truth(o)) return;
               for (int d = 0; d < shape.ndim; ++d) out[row * out_row + d * out_col] = index[d];
               ++row;
             });
      }
    });
  });
}

void masked_select(const Shape& shape, const Operand& in, const Operand& mask, const Operand& out) {
  const int64_t n = numel(shape);
  if (n == 0) return;
  const Chunks chunks = chunks_of(n);
  const int64_t stride = out.strides.v[0];
  with_truth(mask, [&](auto truth) {
    std::vector<int64_t> first = count_chunks(shape, mask.strides, chunks, truth);
    exclusive_prefix(first);
    detail::dispatch_bits(element_size(in.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(in.data);
      T* dst = static_cast<T*>(out.data);
      parallel_for(0, chunks.count, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t written = first[static_cast<size_t>(c)];
          walk(shape, in.strides, mask.strides, chunks.begin(c), chunks.begin(c + 1),
               [&](const int64_t*, int64_t oi, int64_t om) {
                 if (truth(om)) dst[stride * written++] = src[oi];
               });
        }
      });
    });
  });
}

}  // namespace mlu::kernels
