// The reduction ops as accumulator functors, shared by the optimised kernels
// (reduce_isa.cpp) and the reference (reduce.cpp). Acc is double for
// floating inputs and int64_t otherwise.
//   init()                 the identity
//   step(acc, x)           folds in one input element (already converted to Acc)
//   merge(a, b)            combines two partial accumulators (a comes first)
//   finish(acc, count, p)  the result from the accumulator
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../common/convert.h"
#include "mlu_kernels/half.h"
#include "mlu_kernels/reduce.h"
#include "../common/isa_variants.h"

namespace mlu::kernels::reduce_ops {
inline namespace MLU_KERNELS_ISA_TAG {  // Note [Per-ISA variants]

using detail::is_floating_v;

template <class S>
using acc_t = std::conditional_t<is_floating_v<S>, double, int64_t>;

template <class Acc, class S>
inline Acc load(S v) {
  return detail::convert<Acc>(v);
}

template <class Acc>
inline bool is_nan(Acc v) {
  if constexpr (std::is_floating_point_v<Acc>) {
    return v != v;  // not std::isnan: GCC vectorises selects on this one
  } else {
    return false;
  }
}

template <class Acc>
inline Acc abs_of(Acc v) {
  return v < 0 ? -v : v;
}

template <class Acc>
inline Acc lowest() {
  if constexpr (std::is_floating_point_v<Acc>) {
    return -std::numeric_limits<Acc>::infinity();
  } else {
    return std::numeric_limits<Acc>::lowest();
  }
}
template <class Acc>
inline Acc highest() {
  if constexpr (std::is_floating_point_v<Acc>) {
    return std::numeric_limits<Acc>::infinity();
  } else {
    return std::numeric_limits<Acc>::max();
  }
}

// NaN-propagating max / min. `|`, not `||`: without the short circuit the
// select has no control flow, and GCC vectorises it.
template <class Acc>
inline Acc max_of(Acc a, Acc b) {
  return (is_nan(b) | (b > a)) ? b : a;
}
template <class Acc>
inline Acc min_of(Acc a, Acc b) {
  return (is_nan(b) | (b < a)) ? b : a;
}

struct Sum {
  template <class Acc> static Acc init() { return 0; }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return a + x; }
  template <class Acc> static Acc merge(Acc a, Acc b) { return a + b; }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};
struct Mean : Sum {
  template <class Acc> static Acc finish(Acc a, int64_t count, double) {
    return static_cast<Acc>(static_cast<double>(a) / static_cast<double>(count));
  }
};
struct Prod {
  template <class Acc> static Acc init() { return 1; }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return a * x; }
  template <class Acc> static Acc merge(Acc a, Acc b) { return a * b; }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};
// kExact: the op rounds nothing, so partial results may be kept in the
// input's own floating type (reduce_isa.cpp fold_row).
struct Max {
  static constexpr bool kExact = true;
  template <class Acc> static Acc init() { return lowest<Acc>(); }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return max_of(a, x); }
  template <class Acc> static Acc merge(Acc a, Acc b) { return max_of(a, b); }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};
struct Min {
  static constexpr bool kExact = true;
  template <class Acc> static Acc init() { return highest<Acc>(); }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return min_of(a, x); }
  template <class Acc> static Acc merge(Acc a, Acc b) { return min_of(a, b); }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};
template <class Op>
inline constexpr bool exact_v = requires { Op::kExact; };

struct AbsMax : Max {
  template <class Acc> static Acc init() { return 0; }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return max_of(a, abs_of(x)); }
};
struct AbsMin : Min {
  template <class Acc> static Acc step(Acc a, Acc x, double) { return min_of(a, abs_of(x)); }
};
struct Norm0 : Sum {
  template <class Acc> static Acc step(Acc a, Acc x, double) { return a + (x != 0 ? 1 : 0); }
};
struct Norm1 : Sum {
  template <class Acc> static Acc step(Acc a, Acc x, double) { return a + abs_of(x); }
};
struct Norm2 : Sum {
  template <class Acc> static Acc step(Acc a, Acc x, double) { return a + x * x; }
  template <class Acc> static Acc finish(Acc a, int64_t, double) {
    return static_cast<Acc>(std::sqrt(static_cast<double>(a)));
  }
};
struct NormP : Sum {
  template <class Acc> static Acc step(Acc a, Acc x, double p) {
    return a + static_cast<Acc>(std::pow(static_cast<double>(abs_of(x)), p));
  }
  template <class Acc> static Acc finish(Acc a, int64_t, double p) {
    return static_cast<Acc>(std::pow(static_cast<double>(a), 1.0 / p));
  }
};
struct All {
  template <class Acc> static Acc init() { return 1; }
  // Bitwise & of the truth values, not &&: no branch, so the loops vectorise.
  template <class Acc> static Acc step(Acc a, Acc x, double) { return static_cast<Acc>((a != 0) & (x != 0)); }
  template <class Acc> static Acc merge(Acc a, Acc b) { return static_cast<Acc>((a != 0) & (b != 0)); }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};
struct Any {
  template <class Acc> static Acc init() { return 0; }
  template <class Acc> static Acc step(Acc a, Acc x, double) { return static_cast<Acc>((a != 0) | (x != 0)); }
  template <class Acc> static Acc merge(Acc a, Acc b) { return static_cast<Acc>((a != 0) | (b != 0)); }
  template <class Acc> static Acc finish(Acc a, int64_t, double) { return a; }
};

// Calls f(std::type_identity<Functor>) for op.
template <class F>
void dispatch_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Sum: f(std::type_identity<Sum>{}); break;
    case ReduceOp::Prod: f(std::type_identity<Prod>{}); break;
    case ReduceOp::Mean: f(std::type_identity<Mean>{}); break;
    case ReduceOp::Max: f(std::type_identity<Max>{}); break;
    case ReduceOp::Min: f(std::type_identity<Min>{}); break;
    case ReduceOp::AbsMax: f(std::type_identity<AbsMax>{}); break;
    case ReduceOp::AbsMin: f(std::type_identity<AbsMin>{}); break;
    case ReduceOp::Norm0: f(std::type_identity<Norm0>{}); break;
    case ReduceOp::Norm1: f(std::type_identity<Norm1>{}); break;
    case ReduceOp::Norm2: f(std::type_identity<Norm2>{}); break;
    case ReduceOp::NormP: f(std::type_identity<NormP>{}); break;
    case ReduceOp::All: f(std::type_identity<All>{}); break;
    case ReduceOp::Any: f(std::type_identity<Any>{}); break;
  }
}

// The row index of a reduction element is its position in the last dim;
// arg_reduce keeps the first best, with NaN beating everything.
template <class Acc>
inline bool better(bool is_max, Acc candidate, Acc best) {
  if (is_nan(best)) return false;
  if (is_nan(candidate)) return true;
  return is_max ? candidate > best : candidate < best;
}

}  // namespace MLU_KERNELS_ISA_TAG
}  // namespace mlu::kernels::reduce_ops
