// Reductions, arg-reductions and scans, compiled once per ISA like the
// pointwise engine (CMake defines MLU_ISA_NS).
//
// Note [Reduction modes]
// After coalescing, the dims split into kept dims (out stride != 0) and
// reduced dims (out stride 0).
//  - Inner mode (the input's fastest dim is reduced): each output element
//    folds its reduced sub-space row by row; a row is folded with 8 partial
//    accumulators, so the loop vectorises. Outputs go to different threads;
//    with fewer outputs than threads, one output's reduced range is split in
//    fixed chunks whose partials merge in order (deterministic).
//  - Outer mode (the fastest dim is kept): blocks of up to kBlock outputs
//    along that dim fold every reduced position into an accumulator array,
//    reading input rows contiguously (vectorised across outputs).
#include "../common/intrinsics.h"  // first: before anything that includes <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/dispatch.h"
#include "../common/native_lanes.h"
#include "../pointwise/pointwise_table.h"
#include "accumulate.h"
#include "mlu_kernels/parallel.h"
#include "reduce_table.h"

namespace mlu::kernels::MLU_ISA_NS {

namespace {

namespace ro = reduce_ops;

constexpr int64_t kBlock = 256;
constexpr int64_t kGrain = 32768;  // elements read per parallel chunk, at least
// Rows walked together when rows are strided but their neighbours are
// neighbours in memory (arg-reductions and scans over dim 0 of a matrix).
constexpr int64_t kColumns = 64;
// Steps of kColumns rows held in a tile before they are written row by row
// (Note [Scans by columns]): 16 floats fill a cache line.
constexpr int64_t kSteps = 16;

struct Dims {
  int n = 0;
  int64_t size[kMaxDims];
  int64_t in[kMaxDims];
  int64_t out[kMaxDims];
};

// The offset of linear index `linear` (row-major over d.size) in in/out.
inline void offsets_of(const Dims& d, int64_t linear, int64_t& in, int64_t& out) {
  in = 0;
  out = 0;
  for (int k = d.n - 1; k >= 0; --k) {
    const int64_t i = linear % d.size[k];
    linear /= d.size[k];
    in += i * d.in[k];
    out += i * d.out[k];
  }
}

// Note [Prefetch in row folds]
// A fold of many short contiguous rows (sum(dim=-1) of 16384 x 1024 float32,
// 64 MB) stalled on memory, well below the rate of one long fold over the
// same bytes: the per-row merges and stores between the rows' loads keep the
// core from running far enough ahead. Prefetching the lines 8 KB ahead of
// the loads (past the row's end too: a prefetch never faults) brings the
// rows to the long fold's rate; 8 KB was the best of the distances tried
// (2 to 16 KB). Max/min folds (amax(dim=-1)) gain the same way. Timings:
// docs/bench_kernels.md.
constexpr int64_t kPrefetchBytes = 8192;

// Max/min round nothing, so a contiguous row folds in register-wide vectors
// of the input's own type (float for Half/BFloat16, converted a block at a
// time; Note [Folds in register-wide vectors]), in any order; only the result
// widens to the accumulator. GCC vector types: a select on a NaN-or-greater
// mask is one compare-and-blend, which GCC does not find in the scalar loop.
template <class Op, class Lane, class S>
inline Lane fold_extreme(const S* p, int64_t n) {
  using V = typename Native<Lane>::V;
  constexpr int64_t kWidth = Native<Lane>::kWidth;
  constexpr bool kMax = std::is_base_of_v<ro::Max, Op>;
  constexpr bool kAbs = std::is_same_v<Op, ro::AbsMax> || std::is_same_v<Op, ro::AbsMin>;
  // Four accumulators: one compare-and-blend chain would wait for its
  // latency every vector (perf annotate: every blend stalled).
  constexpr int kParts = 4;
  constexpr int64_t kStep = kParts * kWidth;
  V part[kParts];
  for (V& v : part) v = V{} + Op::template init<Lane>();
  const auto fold = [](V& acc, V x) {
    if constexpr (kAbs) x = x < Lane(0) ? -x : x;
    acc = ((x != x) | (kMax ? x > acc : x < acc)) ? x : acc;
  };
  Lane buffer[kBlock];
  int64_t i = 0;
  while (i + kWidth <= n) {
    const int64_t m = std::min(kBlock, (n - i) / kWidth * kWidth);
    const Lane* src;
    if constexpr (std::is_same_v<S, Lane>) {
      src = p + i;
    } else {
      for (int64_t j = 0; j < m; ++j) buffer[j] = ro::load<Lane>(p[i + j]);
      src = buffer;
    }
    int64_t j = 0;
    for (; j + kStep <= m; j += kStep) {
      // Note [Prefetch in row folds]: the lines kPrefetchBytes ahead.
      const char* ahead = reinterpret_cast<const char*>(p + i + j) + kPrefetchBytes;
      for (size_t b = 0; b < kStep * sizeof(S); b += 64) __builtin_prefetch(ahead + b);
      for (int v = 0; v < kParts; ++v) {
        V x;
        std::memcpy(&x, src + j + kWidth * v, sizeof x);
        fold(part[v], x);
      }
    }
    for (; j < m; j += kWidth) {
      V x;
      std::memcpy(&x, src + j, sizeof x);
      fold(part[(j / kWidth) % kParts], x);
    }
    i += m;
  }
  // A fixed merge order (max / min are exact: the order only picks which NaN
  // or signed zero comes out, as any order of the CPU's lanes does).
  fold(part[0], part[1]);
  fold(part[2], part[3]);
  fold(part[0], part[2]);
  Lane result = part[0][0];
  for (int l = 1; l < kWidth; ++l) result = Op::merge(result, part[0][l]);
  for (; i < n; ++i) result = Op::step(result, ro::load<Lane>(p[i]), 0.0);
  return result;
}

// Ops whose step is plain arithmetic on its accumulator, so it applies to a
// vector of lanes as written (accumulate.h).
typedef double EightDoubles __attribute__((vector_size(64)));
typedef float EightFloats __attribute__((vector_size(32)));
template <class Op>
inline constexpr bool kLaneStep = std::is_same_v<Op, ro::Sum> || std::is_same_v<Op, ro::Mean> ||
                                  std::is_same_v<Op, ro::Prod> || std::is_same_v<Op, ro::Norm1> ||
                                  std::is_same_v<Op, ro::Norm2>;
// Op::step of those ops on lanes, spelled out here rather than instantiating
// accumulate.h's templates on a vector type: those would be one symbol shared
// by the per-ISA builds of this file (an ODR hazard, and a psABI change).
// V: EightDoubles, or Native<float>::V (Note [Float chunks in sums]).
template <class Op, class V>
inline void lane_step(V& a, const V& x) {  // by reference: no vector in the ABI
  if constexpr (std::is_same_v<Op, ro::Prod>) {
    a *= x;
  } else if constexpr (std::is_same_v<Op, ro::Norm1>) {
    a += x < V{} ? -x : x;
  } else if constexpr (std::is_same_v<Op, ro::Norm2>) {
    a += x * x;
  } else {
    a += x;
  }
}

// 8 floats at q as doubles. On AVX-512 one vcvtps2pd ymm -> zmm: GCC lowers
// __builtin_convertvector to four 128-bit converts with inserts and
// extracts, which made the whole fold much slower (perf annotate of sum;
// timings in docs/bench_kernels.md).
[[gnu::always_inline]] inline void widen8(const float* q, EightDoubles& wide) {  // by reference: no vector in the ABI
#if defined(__AVX512F__)
  const __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(q));
  std::memcpy(&wide, &d, sizeof wide);
#else
  EightFloats f;
  std::memcpy(&f, q, sizeof f);
  wide = __builtin_convertvector(f, EightDoubles);
#endif
}

// Note [Float chunks in sums]
// The CPU folds float, Half and BFloat16 sums, norms and products in float
// (at::opmath_type), in a cascade of vector accumulators. A contiguous row of
// those types folds kChunk elements at a time into 64 float slots (kChunk /
// 64 = 16 steps per slot; four vectors of 16 lanes on AVX-512, eight of 8 on
// AVX2, the same slots), and each chunk's partial results
// then merge into the double lanes: the rounding error of a chunk is that of
// 16 float steps, the error across chunks that of double, at the float rate
// (converting every element to double made the fold compute-bound at half
// the CPU's speed). Outer mode does the same along the reduced dims: 16
// reduced rows into float accumulators, then merged into the double ones.
// Products: a chunk's 16 float factors per lane can
// overflow where the exact product would not; the CPU's float lanes (every
// eighth factor of the whole row) overflow first.
constexpr int64_t kChunk = 1024;

// Folds the whole chunks of 64 elements at p into lanes; returns how many
// elements it folded. Element j of a chunk folds into float slot j % 64, the
// slots held in register-wide vectors (Note [Folds in register-wide
// vectors]), and slots 8k .. 8k + 7 merge into lanes[k / 2]: the same
// roundings on every ISA.
template <class Op, class S>
int64_t fold_float_chunks(const S* p, int64_t n, EightDoubles (&lanes)[4]) {
  using V = Native<float>::V;
  constexpr int kSlots = 64, kParts = kSlots / Native<float>::kWidth;
  float buffer[kChunk];
  int64_t i = 0;
  while (i + kSlots <= n) {
    const int64_t m = std::min(kChunk, (n - i) / kSlots * kSlots);
    const float* src;
    if constexpr (std::is_same_v<S, float>) {
      src = p + i;
    } else {
      for (int64_t j = 0; j < m; ++j) buffer[j] = ro::load<float>(p[i + j]);
      src = buffer;
    }
    V part[kParts];
    for (V& v : part) v = V{} + Op::template init<float>();
    for (int64_t j = 0; j < m; j += kSlots) {
      // Note [Prefetch in row folds]: the lines kPrefetchBytes ahead.
      const char* ahead = reinterpret_cast<const char*>(p + i + j) + kPrefetchBytes;
      for (size_t b = 0; b < kSlots * sizeof(S); b += 64) __builtin_prefetch(ahead + b);
      for (int v = 0; v < kParts; ++v) {
        V x;
        std::memcpy(&x, src + j + Native<float>::kWidth * v, sizeof x);
        lane_step<Op>(part[v], x);
      }
    }
    float spill[kSlots];
    std::memcpy(spill, part, sizeof spill);
    for (int k = 0; k < kSlots / 8; ++k) {
      EightDoubles wide;
      widen8(spill + 8 * k, wide);
      if constexpr (std::is_same_v<Op, ro::Prod>) {
        lanes[k / 2] *= wide;
      } else {
        lanes[k / 2] += wide;
      }
    }
    i += m;
  }
  return i;
}

// Folds n elements at p (stride s) into acc.
template <class Op, class Acc, class S>
inline Acc fold_row(Acc acc, const S* p, int64_t s, int64_t n, double param) {
  if constexpr (ro::exact_v<Op> && ro::is_floating_v<S>) {
    using Lane = std::conditional_t<std::is_same_v<S, double>, double, float>;
    if (s == 1 && n >= 16) return Op::merge(acc, static_cast<Acc>(fold_extreme<Op, Lane>(p, n)));
  }
  if (s == 1 && n >= 8) {
    Acc part[8];
    for (int l = 0; l < 8; ++l) part[l] = Op::template init<Acc>();
    int64_t i = 0;
    if constexpr (kLaneStep<Op> && std::is_same_v<Acc, double>) {
      // Four independent vectors of 8 partial results (one chain would wait
      // for the add's latency every 8 elements), merged into the 8 partials
      // below. Double folds here; float, Half and BFloat16 fold in float chunks
      // (Note [Float chunks in sums]) and only their tail widens here.
      EightDoubles lanes[4];
      for (EightDoubles& l : lanes) l = EightDoubles{} + Op::template init<double>();
      auto fold32 = [&](const auto* q) {  // 32 elements of float or double
        for (int v = 0; v < 4; ++v) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*q)>, float>) {
            EightDoubles x;
            widen8(q + 8 * v, x);
            lane_step<Op>(lanes[v], x);
          } else {
            EightDoubles x;
            std::memcpy(&x, q + 8 * v, sizeof x);
            lane_step<Op>(lanes[v], x);
          }
        }
      };
      // (Acc is double: S is floating.)
      if constexpr (!std::is_same_v<S, double>) i = fold_float_chunks<Op>(p, n, lanes);
      if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) {
        for (; i + 32 <= n; i += 32) fold32(p + i);
      }
      for (int k = 0; k < 8; ++k) {
        part[k] = Op::merge(Op::merge(lanes[0][k], lanes[1][k]), Op::merge(lanes[2][k], lanes[3][k]));
      }
    }
    for (; i + 8 <= n; i += 8) {
      for (int l = 0; l < 8; ++l) part[l] = Op::step(part[l], ro::load<Acc>(p[i + l]), param);
    }
    for (; i < n; ++i) part[0] = Op::step(part[0], ro::load<Acc>(p[i]), param);
    for (int l = 0; l < 8; ++l) acc = Op::merge(acc, part[l]);
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) acc = Op::step(acc, ro::load<Acc>(p[i * s]), param);
  return acc;
}

// Folds the reduced positions [begin, end) (row-major over r) starting at p.
template <class Op, class Acc, class S>
Acc fold_range(Acc acc, const S* p, const Dims& r, int64_t begin, int64_t end, double param) {
  const int last = r.n - 1;
  const int64_t row = r.size[last];
  int64_t index[kMaxDims];
  int64_t rest = begin, offset = 0;
  for (int k = last; k >= 0; --k) {
    index[k] = rest % r.size[k];
    rest /= r.size[k];
    offset += index[k] * r.in[k];
  }
  int64_t remaining = end - begin;
  while (remaining > 0) {
    const int64_t len = std::min(row - index[last], remaining);
    acc = fold_row<Op>(acc, p + offset, r.in[last], len, param);
    remaining -= len;
    if (remaining == 0) break;
    offset -= index[last] * r.in[last];
    index[last] = 0;
    for (int k = last - 1; k >= 0; --k) {
      offset += r.in[k];
      if (++index[k] < r.size[k]) break;
      offset -= r.in[k] * r.size[k];
      index[k] = 0;
    }
  }
  return acc;
}

// Writes one result, converted to the output's dtype (chosen at run time:
// results are few compared with the elements folded into them).
template <class Acc>
void store(const Operand& out, int64_t offset, Acc value) {
  detail::dispatch(out.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<D>) static_cast<D*>(out.data)[offset] = detail::convert<D>(value);
  });
}

// Writes m results to out at offsets[j]: one dtype dispatch for all of them
// (per result it cost as much as folding a short row).
template <class R>
void store_many(const Operand& out, const int64_t* offsets, const R* values, int64_t m) {
  detail::dispatch(out.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<D>) {
      D* d = static_cast<D*>(out.data);
      for (int64_t j = 0; j < m; ++j) d[offsets[j]] = detail::convert<D>(values[j]);
    }
  });
}

template <class Op, class S, class Acc = ro::acc_t<S>>
void reduce_typed(const Dims& kept, const Dims& red, bool last_reduced, int64_t count, const S* in,
                  const Operand& out, double p) {
  int64_t n_out = 1, n_red = 1;
  for (int k = 0; k < kept.n; ++k) n_out *= kept.size[k];
  for (int k = 0; k < red.n; ++k) n_red *= red.size[k];
  if (n_red == 0 || red.n == 0) {
    // Nothing (or a single element) to fold per output.
    parallel_for(0, n_out, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t io, oo;
        offsets_of(kept, o, io, oo);
        Acc acc = Op::template init<Acc>();
        if (n_red == 1) acc = Op::step(acc, ro::load<Acc>(in[io]), p);
        store(out, oo, Op::finish(acc, count, p));
      }
    });
    return;
  }
  if (kept.n == 0 || last_reduced) {
    const int threads = num_threads();
    if (n_out >= threads || n_red < 2 * kGrain) {
      // Many outputs: kBlock of them at a time, stored together. One reduced
      // dim (the usual case after coalescing) is one row: folded directly.
      const int64_t grain = std::max<int64_t>(1, kGrain / n_red);
      using R = decltype(Op::finish(Acc{}, count, p));
      parallel_for(0, n_out, grain, [&](int64_t b, int64_t e) {
        R results[kBlock];
        int64_t out_offsets[kBlock];
        for (int64_t o0 = b; o0 < e; o0 += kBlock) {
          const int64_t m = std::min(kBlock, e - o0);
          for (int64_t j = 0; j < m; ++j) {
            int64_t io;
            offsets_of(kept, o0 + j, io, out_offsets[j]);
            const Acc acc = red.n == 1 ? fold_row<Op>(Op::template init<Acc>(), in + io, red.in[0], n_red, p)
                                       : fold_range<Op>(Op::template init<Acc>(), in + io, red, 0, n_red, p);
            results[j] = Op::finish(acc, count, p);
          }
          store_many(out, out_offsets, results, m);
        }
      });
      return;
    }
    // Few outputs, long reductions: fixed chunks of the reduced range.
    const int64_t chunks = std::min<int64_t>(threads, n_red / kGrain);
    vector<Acc> partial(static_cast<size_t>(chunks));
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t io, oo;
      offsets_of(kept, o, io, oo);
      parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          partial[static_cast<size_t>(c)] = fold_range<Op>(Op::template init<Acc>(), in + io, red,
                                                           n_red * c / chunks, n_red * (c + 1) / chunks, p);
        }
      });
      Acc acc = Op::template init<Acc>();
      for (const Acc& part : partial) acc = Op::merge(acc, part);
      store(out, oo, Op::finish(acc, count, p));
    }
    return;
  }
  // Outer mode: the last kept dim runs along the accumulator array.
  const int last = kept.n - 1;
  const int64_t len = kept.size[last];
  const int64_t s_in = kept.in[last], s_out = kept.out[last];
  Dims outer = kept;
  outer.n = last;
  int64_t n_outer = 1;
  for (int k = 0; k < outer.n; ++k) n_outer *= outer.size[k];
  const int64_t blocks = (len + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kGrain / (n_red * std::min(len, kBlock)));
  // Exact ops (max, min) keep floating accumulators in the input's own
  // precision (float for Float16 / BFloat16): no widening per element.
  using Lanes = std::conditional_t<ro::exact_v<Op> && ro::is_floating_v<S>,
                                   std::conditional_t<std::is_same_v<S, double>, double, float>, Acc>;
  constexpr bool kFloatChunks = kLaneStep<Op> && ro::is_floating_v<S> && !std::is_same_v<S, double>;
  parallel_for(0, n_outer * blocks, grain, [&](int64_t b, int64_t e) {
    Lanes acc[kBlock];
    [[maybe_unused]] float chunk[kBlock];  // kFloatChunks only
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / blocks, j0 = (w % blocks) * kBlock;
      const int64_t m = std::min(kBlock, len - j0);
      int64_t io, oo;
      offsets_of(outer, o, io, oo);
      io += j0 * s_in;
      oo += j0 * s_out;
      for (int64_t j = 0; j < m; ++j) acc[j] = Op::template init<Lanes>();
      // Every reduced position, row-major over red.
      int64_t index[kMaxDims] = {};
      int64_t offset = 0;
      for (int64_t r = 0; r < n_red; ++r) {
        const S* row = in + io + offset;
        if constexpr (kFloatChunks) {
          // Note [Float chunks in sums]: 16 reduced rows in float, then merged.
          if (r % 16 == 0) std::fill_n(chunk, m, Op::template init<float>());
          if (s_in == 1) {
            for (int64_t j = 0; j < m; ++j) chunk[j] = Op::step(chunk[j], ro::load<float>(row[j]), p);
          } else {
            for (int64_t j = 0; j < m; ++j) chunk[j] = Op::step(chunk[j], ro::load<float>(row[j * s_in]), p);
          }
          if (r % 16 == 15 || r == n_red - 1) {
            for (int64_t j = 0; j < m; ++j) acc[j] = Op::merge(acc[j], static_cast<Lanes>(chunk[j]));
          }
        } else if (s_in == 1) {
          for (int64_t j = 0; j < m; ++j) acc[j] = Op::step(acc[j], ro::load<Lanes>(row[j]), p);
        } else {
          for (int64_t j = 0; j < m; ++j) acc[j] = Op::step(acc[j], ro::load<Lanes>(row[j * s_in]), p);
        }
        for (int k = red.n - 1; k >= 0; --k) {
          offset += red.in[k];
          if (++index[k] < red.size[k]) break;
          offset -= red.in[k] * red.size[k];
          index[k] = 0;
        }
      }
      for (int64_t j = 0; j < m; ++j) store(out, oo + j * s_out, Op::finish(acc[j], count, p));
    }
  });
}

// Note [Byte-wide all / any]
// all / any of a one-byte integer or bool tensor only ask whether a byte is
// zero, so they fold the bytes as uint8_t into a uint8_t accumulator: the
// loops then vectorise 64 bytes at a time (bool loads do not vectorise, and
// an int64_t accumulator took 8 lanes per vector).
template <class Op, class S>
inline constexpr bool kByteLogic = (std::is_same_v<Op, ro::All> || std::is_same_v<Op, ro::Any>) &&
                                   sizeof(S) == 1 && !ro::is_floating_v<S>;

void reduce_impl(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  // Split the (coalesced) dims into kept and reduced ones.
  Dims kept, red;
  int64_t count = 1;
  const bool last_reduced = shape.ndim > 0 && out.strides.v[shape.ndim - 1] == 0;
  for (int d = 0; d < shape.ndim; ++d) {
    if (out.strides.v[d] == 0) {
      red.size[red.n] = shape.sizes[d];
      red.in[red.n] = in.strides.v[d];
      red.out[red.n++] = 0;
      count *= shape.sizes[d];
    } else {
      kept.size[kept.n] = shape.sizes[d];
      kept.in[kept.n] = in.strides.v[d];
      kept.out[kept.n++] = out.strides.v[d];
    }
  }
  ro::dispatch_op(op, [&](auto op_tag) {
    using Op = typename decltype(op_tag)::type;
    detail::dispatch(in.dtype, [&](auto in_tag) {
      using S = typename decltype(in_tag)::type;
      if constexpr (kByteLogic<Op, S>) {
        // Note [Byte-wide all / any]
        const auto* bytes = static_cast<const uint8_t*>(in.data);
        reduce_typed<Op, uint8_t, uint8_t>(kept, red, last_reduced, count, bytes, out, p);
      } else if constexpr (!detail::is_complex_v<S>) {
        reduce_typed<Op>(kept, red, last_reduced, count, static_cast<const S*>(in.data), out, p);
      }
    });
  });
}

// Rows along the last dim; row r's offsets from the outer dims.
struct Rows {
  Dims outer;  // in = input stride, out = first output's stride
  int64_t out2[kMaxDims];
  int64_t n_rows = 1;
  int64_t len = 0;
};

inline void row_offsets(const Rows& rows, int64_t r, int64_t& in, int64_t& out, int64_t& out2) {
  in = out = out2 = 0;
  for (int k = rows.outer.n - 1; k >= 0; --k) {
    const int64_t i = r % rows.outer.size[k];
    r /= rows.outer.size[k];
    in += i * rows.outer.in[k];
    out += i * rows.outer.out[k];
    out2 += i * rows.out2[k];
  }
}

Rows make_rows(const Shape& shape, const Strides& in, const Strides& out, const Strides& out2) {
  Rows rows;
  rows.outer.n = shape.ndim - 1;
  for (int d = 0; d < rows.outer.n; ++d) {
    rows.outer.size[d] = shape.sizes[d];
    rows.outer.in[d] = in.v[d];
    rows.outer.out[d] = out.v[d];
    rows.out2[d] = out2.v[d];
    rows.n_rows *= shape.sizes[d];
  }
  rows.len = shape.sizes[shape.ndim - 1];
  return rows;
}

// The index of the first maximum (minimum) of a contiguous floating row, or
// of its first NaN: the row's extreme by fold_extreme (vectorised), then the
// first element equal to it, 16 at a time. Equal to the sequential scan of
// ro::better (a signed zero matches either zero: the scan keeps the first).
template <class S>
int64_t first_extreme(bool is_max, const S* p, int64_t n) {
  if constexpr (!ro::is_floating_v<S>) {
    return 0;  // not called: integer rows take the sequential scan
  } else {
    using Lane = std::conditional_t<std::is_same_v<S, double>, double, float>;
    const Lane best = is_max ? fold_extreme<ro::Max, Lane>(p, n) : fold_extreme<ro::Min, Lane>(p, n);
    const bool nan = best != best;
    auto hit = [&](int64_t i) {
      const Lane v = ro::load<Lane>(p[i]);
      return nan ? v != v : v == best;
    };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      bool any = false;
      for (int l = 0; l < 16; ++l) any |= hit(i + l);
      if (any) break;
    }
    while (i < n - 1 && !hit(i)) ++i;  // the extreme is an element: found by n - 1
    return i;
  }
}

void arg_reduce_impl(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                     const Operand& in) {
  const Rows rows = make_rows(shape, in.strides, indices.strides, values.strides);
  const int64_t s = in.strides.v[shape.ndim - 1];
  detail::dispatch(in.dtype, [&](auto in_tag) {
    using S = typename decltype(in_tag)::type;
    if constexpr (!detail::is_complex_v<S>) {
      using Acc = ro::acc_t<S>;
      const S* src = static_cast<const S*>(in.data);
      const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(rows.len, 1));
      auto store = [&](int64_t oi, int64_t ov, const S* p, int64_t best_i) {
        static_cast<int64_t*>(indices.data)[oi] = best_i;
        if (values.data != nullptr) {
          detail::dispatch(values.dtype, [&](auto out_tag) {
            using D = typename decltype(out_tag)::type;
            static_cast<D*>(values.data)[ov] = detail::convert<D>(p[best_i * s]);
          });
        }
      };
      const int last = rows.outer.n - 1;
      if (last >= 0 && s != 1 && rows.outer.in[last] == 1 && rows.outer.size[last] >= 16) {
        // Strided rows whose neighbours are neighbours in memory (max over
        // dim 0 of a matrix): kColumns rows at a time, each step reading a
        // contiguous span, each row keeping its first best as the scan does.
        const int64_t width = rows.outer.size[last], per_row = (width + kColumns - 1) / kColumns;
        parallel_for(0, rows.n_rows / width * per_row, std::max<int64_t>(1, grain / kColumns), [&](int64_t b, int64_t e) {
          for (int64_t blk = b; blk < e; ++blk) {
            const int64_t c0 = (blk % per_row) * kColumns, w = std::min(kColumns, width - c0);
            int64_t io, oi, ov;
            row_offsets(rows, blk / per_row * width + c0, io, oi, ov);
            const S* p = src + io;
            Acc best[kColumns];
            int64_t best_i[kColumns] = {};
            for (int64_t c = 0; c < w; ++c) best[c] = ro::load<Acc>(p[c]);
            for (int64_t i = 1; i < rows.len; ++i) {
              const S* x = p + i * s;
              for (int64_t c = 0; c < w; ++c) {
                const Acc v = ro::load<Acc>(x[c]);
                if (ro::better(is_max, v, best[c])) {
                  best[c] = v;
                  best_i[c] = i;
                }
              }
            }
            for (int64_t c = 0; c < w; ++c) store(oi + c * rows.outer.out[last], ov + c * rows.out2[last], p + c, best_i[c]);
          }
        });
        return;
      }
      parallel_for(0, rows.n_rows, grain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t io, oi, ov;
          row_offsets(rows, r, io, oi, ov);
          const S* p = src + io;
          int64_t best_i = 0;
          if (s == 1 && rows.len >= 16 && ro::is_floating_v<S>) {
            best_i = first_extreme(is_max, p, rows.len);
          } else {
            Acc best = ro::load<Acc>(p[0]);
            for (int64_t i = 1; i < rows.len; ++i) {
              const Acc v = ro::load<Acc>(p[i * s]);
              if (ro::better(is_max, v, best)) {
                best = v;
                best_i = i;
              }
            }
          }
          store(oi, ov, p, best_i);
        }
      });
    }
  });
}

// Note [Scan accumulators]: the CPU's cumsum / cumprod accumulate in
// at::acc_type: double for float and double, float for Float16 / BFloat16
// (and int64 for integers), and so do these.
template <class S>
using scan_acc_t = std::conditional_t<std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>, float, ro::acc_t<S>>;

template <class S>
void scan_typed(ScanOp op, const Rows& rows, const S* src, int64_t s_in, const Operand& out, int64_t s_out) {
  using Acc = scan_acc_t<S>;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(rows.len, 1));
  const int last = rows.outer.n - 1;
  // Note [Scans by columns]
  // Strided rows whose neighbours are neighbours in memory, in the input or
  // the output (cumsum over dim 0 of a matrix), go kColumns at a time: each
  // step reads or writes the kColumns rows' contiguous span. An operand laid
  // out the other way (contiguous rows far apart: a transposed view) is read
  // (written) through a tile of kSteps steps, row by row; the row-at-a-time
  // loop touched one element per cache line of the strided operand, an
  // order of magnitude slower (timings: docs/bench_kernels.md).
  const bool by_columns =
      last >= 0 && rows.outer.size[last] >= 16 &&
      ((s_out != 1 && rows.outer.out[last] == 1) || (s_in != 1 && rows.outer.in[last] == 1));
  const int64_t column_in = last >= 0 ? rows.outer.in[last] : 1, column_out = last >= 0 ? rows.outer.out[last] : 1;
  detail::dispatch(out.dtype, [&](auto out_tag) {
    using D = typename decltype(out_tag)::type;
    if constexpr (!detail::is_complex_v<D>) {
      D* dst = static_cast<D*>(out.data);
      if (by_columns) {
        const int64_t width = rows.outer.size[last];
        const int64_t per_row = (width + kColumns - 1) / kColumns;
        const int64_t blocks = rows.n_rows / width * per_row;
        parallel_for(0, blocks, std::max<int64_t>(1, grain / kColumns), [&](int64_t b, int64_t e) {
          for (int64_t blk = b; blk < e; ++blk) {
            const int64_t c0 = (blk % per_row) * kColumns, w = std::min(kColumns, width - c0);
            int64_t io, oo, unused;
            row_offsets(rows, blk / per_row * width + c0, io, oo, unused);
            const S* in = src + io;
            D* o = dst + oo;
            Acc acc[kColumns];
            std::fill_n(acc, w, op == ScanOp::Sum ? Acc(0) : Acc(1));
            S tile_in[kSteps][kColumns];  // column_in != 1 only
            D tile[kSteps][kColumns];     // column_out != 1 only
            for (int64_t i0 = 0; i0 < rows.len; i0 += kSteps) {
              const int64_t n = std::min(kSteps, rows.len - i0);
              if (column_in != 1) {
                for (int64_t c = 0; c < w; ++c) {
                  const S* x = in + c * column_in + i0 * s_in;
                  for (int64_t k = 0; k < n; ++k) tile_in[k][c] = x[k * s_in];
                }
              }
              for (int64_t k = 0; k < n; ++k) {
                const S* x = column_in == 1 ? in + (i0 + k) * s_in : tile_in[k];
                if (op == ScanOp::Sum) {
                  for (int64_t c = 0; c < w; ++c) acc[c] += ro::load<Acc>(x[c]);
                } else {
                  for (int64_t c = 0; c < w; ++c) acc[c] *= ro::load<Acc>(x[c]);
                }
                D* y = column_out == 1 ? o + (i0 + k) * s_out : tile[k];
                for (int64_t c = 0; c < w; ++c) y[c] = detail::convert<D>(acc[c]);
              }
              if (column_out != 1) {
                for (int64_t c = 0; c < w; ++c) {
                  D* y = o + c * column_out + i0 * s_out;
                  for (int64_t k = 0; k < n; ++k) y[k * s_out] = tile[k][c];
                }
              }
            }
          }
        });
        return;
      }
      parallel_for(0, rows.n_rows, grain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t io, oo, unused;
          row_offsets(rows, r, io, oo, unused);
          const S* in = src + io;
          D* o = dst + oo;
          Acc acc = op == ScanOp::Sum ? Acc(0) : Acc(1);
          // The running values go through a block, so the conversions to D
          // run as their own (vectorisable) loop, off the add's dependency chain.
          Acc block[kBlock];
          for (int64_t i0 = 0; i0 < rows.len; i0 += kBlock) {
            const int64_t n = std::min(kBlock, rows.len - i0);
            const S* x = in + i0 * s_in;
            if (op == ScanOp::Sum) {
              for (int64_t i = 0; i < n; ++i) block[i] = acc += ro::load<Acc>(x[i * s_in]);
            } else {
              for (int64_t i = 0; i < n; ++i) block[i] = acc *= ro::load<Acc>(x[i * s_in]);
            }
            D* y = o + i0 * s_out;
            if (s_out == 1) {
              for (int64_t i = 0; i < n; ++i) y[i] = detail::convert<D>(block[i]);
            } else {
              for (int64_t i = 0; i < n; ++i) y[i * s_out] = detail::convert<D>(block[i]);
            }
          }
        }
      });
    }
  });
}

void scan_impl(ScanOp op, const Shape& shape, const Operand& out, const Operand& in) {
  const Rows rows = make_rows(shape, in.strides, out.strides, out.strides);
  detail::dispatch(in.dtype, [&](auto in_tag) {
    using S = typename decltype(in_tag)::type;
    if constexpr (!detail::is_complex_v<S>) {
      scan_typed(op, rows, static_cast<const S*>(in.data), in.strides.v[shape.ndim - 1], out,
                 out.strides.v[shape.ndim - 1]);
    }
  });
}

// Moments (reduce_table.h) of doubles: eight lanes of each, so the loop
// vectorises (an add chain would not be reassociated); the lanes merge in a
// fixed order. min / max skip NaN here; statistics() makes them NaN when the
// sum of squares is (Note [One-pass statistics] in reduce.cpp).
template <bool kMinus>
void moments_of_doubles(const double* p, const double* q, int64_t n, double shift, double m[detail::kMoments]) {
  constexpr int kLanes = 8;
  double sum[kLanes], shifted[kLanes], squares[kLanes], low[kLanes], high[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    sum[l] = shifted[l] = squares[l] = 0;
    low[l] = ro::highest<double>();
    high[l] = ro::lowest<double>();
  }
  auto fold = [&](int l, int64_t i) {
    double x = p[i];
    if constexpr (kMinus) x -= q[i];
    const double d = x - shift;
    sum[l] += d;
    shifted[l] += d * d;
    squares[l] += x * x;
    low[l] = x < low[l] ? x : low[l];
    high[l] = x > high[l] ? x : high[l];
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) fold(l, i + l);
  }
  for (int l = 0; i < n; ++i, ++l) fold(l, i);
  m[0] = m[1] = m[2] = 0;
  m[3] = ro::highest<double>();
  m[4] = ro::lowest<double>();
  for (int l = 0; l < kLanes; ++l) {
    m[0] += sum[l];
    m[1] += shifted[l];
    m[2] += squares[l];
    m[3] = std::min(m[3], low[l]);
    m[4] = std::max(m[4], high[l]);
  }
}

// Moments of 16- and 32-bit floats: blocks of kBlock elements (converted to
// float, differences taken in float) fold in register-wide float vectors
// (Note [Folds in register-wide vectors]), and each block's sums widen to
// double, as Note [Float chunks in sums] does for sum().
template <bool kMinus, class S>
void moments_of_floats(const S* p, const S* q, int64_t n, double shift, double m[detail::kMoments]) {
  using V = Native<float>::V;
  constexpr int64_t kWidth = Native<float>::kWidth;
  const float c = static_cast<float>(shift);
  double sum = 0, shifted = 0, squares = 0;
  V low = V{} + ro::highest<float>(), high = V{} + ro::lowest<float>();
  float buffer[kBlock];
  int64_t i = 0;
  while (i + kWidth <= n) {
    const int64_t count = std::min(kBlock, (n - i) / kWidth * kWidth);
    const float* src;
    if constexpr (std::is_same_v<S, float> && !kMinus) {
      src = p + i;
    } else {
      for (int64_t j = 0; j < count; ++j) {
        buffer[j] = ro::load<float>(p[i + j]);
        if constexpr (kMinus) buffer[j] -= ro::load<float>(q[i + j]);
      }
      src = buffer;
    }
    V block_sum = V{}, block_shifted = V{}, block_squares = V{};
    for (int64_t j = 0; j < count; j += kWidth) {
      V x;
      std::memcpy(&x, src + j, sizeof x);
      const V d = x - c;
      block_sum += d;
      block_shifted += d * d;
      block_squares += x * x;
      low = x < low ? x : low;
      high = x > high ? x : high;
    }
    for (int64_t l = 0; l < kWidth; ++l) {
      sum += static_cast<double>(block_sum[l]);
      shifted += static_cast<double>(block_shifted[l]);
      squares += static_cast<double>(block_squares[l]);
    }
    i += count;
  }
  m[3] = ro::highest<double>();
  m[4] = ro::lowest<double>();
  for (int64_t l = 0; l < kWidth; ++l) {
    m[3] = std::min(m[3], static_cast<double>(low[l]));
    m[4] = std::max(m[4], static_cast<double>(high[l]));
  }
  for (; i < n; ++i) {
    float x = ro::load<float>(p[i]);
    if constexpr (kMinus) x -= ro::load<float>(q[i]);
    const float d = x - c;
    sum += d;
    shifted += static_cast<double>(d) * d;
    squares += static_cast<double>(x) * x;
    m[3] = x < m[3] ? x : m[3];
    m[4] = x > m[4] ? x : m[4];
  }
  m[0] = sum;
  m[1] = shifted;
  m[2] = squares;
}

void moments_impl(const StatisticsSpan& span, int64_t begin, int64_t end, double shift, double m[detail::kMoments]) {
  detail::dispatch(span.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (ro::is_floating_v<S>) {
      const S* p = static_cast<const S*>(span.data) + begin;
      const S* q = span.minus != nullptr ? static_cast<const S*>(span.minus) + begin : nullptr;
      auto fold = [&](auto minus) {
        if constexpr (std::is_same_v<S, double>) {
          moments_of_doubles<decltype(minus)::value>(p, q, end - begin, shift, m);
        } else {
          moments_of_floats<decltype(minus)::value>(p, q, end - begin, shift, m);
        }
      };
      if (q != nullptr) {
        fold(std::true_type{});
      } else {
        fold(std::false_type{});
      }
    }
  });
}

}  // namespace

const detail::ReduceKernels& reduce_kernels() {
  static const detail::ReduceKernels kernels{&reduce_impl, &arg_reduce_impl, &scan_impl, &moments_impl};
  return kernels;
}

}  // namespace mlu::kernels::MLU_ISA_NS
