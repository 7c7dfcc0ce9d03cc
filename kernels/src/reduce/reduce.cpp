// Reduction entry points: coalesce, pick the ISA's kernels; and the
// references (one element at a time, by linear index).
#include <vector>

#include "../common/dispatch.h"
#include "../common/unravel.h"
#include "accumulate.h"
#include "mlu_kernels/isa.h"
#include "reduce_table.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {

namespace {

namespace ro = reduce_ops;

const detail::ReduceKernels& active() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT(reduce_kernels)();
}

// Rows along the last dim must stay rows: only the outer dims coalesce.
void coalesce_outer(Shape& shape, Strides* operands[], int n) {
  if (shape.ndim <= 1) return;
  Shape outer;
  outer.ndim = shape.ndim - 1;
  int64_t last_sizes = shape.sizes[shape.ndim - 1];
  std::vector<int64_t> last(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) last[static_cast<size_t>(k)] = operands[k]->v[shape.ndim - 1];
  for (int d = 0; d < outer.ndim; ++d) outer.sizes[d] = shape.sizes[d];
  coalesce(outer, operands, n);
  shape = outer;
  shape.sizes[shape.ndim] = last_sizes;
  for (int k = 0; k < n; ++k) operands[k]->v[shape.ndim] = last[static_cast<size_t>(k)];
  ++shape.ndim;
}

template <class T>
T read(const Operand& o, int64_t offset) {
  T value{};
  detail::dispatch(o.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<S>) value = detail::convert<T>(static_cast<const S*>(o.data)[offset]);
  });
  return value;
}

template <class T>
void write(const Operand& o, int64_t offset, T value) {
  detail::dispatch(o.dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (!detail::is_complex_v<D>) static_cast<D*>(o.data)[offset] = detail::convert<D>(value);
  });
}

bool floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}

template <class Acc>
void reduce_ref_typed(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  ro::dispatch_op(op, [&](auto tag) {
    using Op = typename decltype(tag)::type;
    int64_t count = 1;
    Shape out_shape = shape;
    for (int d = 0; d < shape.ndim; ++d) {
      if (out.strides.v[d] == 0) count *= shape.sizes[d];
    }
    if (numel(shape) == 0) {
      // Empty reductions: every output (if any) gets the identity.
      for (int d = 0; d < shape.ndim; ++d) {
        if (out.strides.v[d] == 0) out_shape.sizes[d] = 1;
      }
      for (int64_t i = 0; i < numel(out_shape); ++i) {
        write(out, detail::unravel_offset(i, out_shape, out.strides), Op::finish(Op::template init<Acc>(), count, p));
      }
      return;
    }
    // One accumulator per output offset, folded in row-major input order.
    std::vector<std::pair<int64_t, Acc>> accs;
    const int64_t n = numel(shape);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t o = detail::unravel_offset(i, shape, out.strides);
      size_t slot = 0;
      while (slot < accs.size() && accs[slot].first != o) ++slot;
      if (slot == accs.size()) accs.push_back({o, Op::template init<Acc>()});
      accs[slot].second = Op::step(accs[slot].second, read<Acc>(in, detail::unravel_offset(i, shape, in.strides)), p);
    }
    for (const auto& [o, acc] : accs) write(out, o, Op::finish(acc, count, p));
  });
}

}  // namespace

void reduce(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  Shape s = shape;
  Operand o = out, i = in;
  Strides* strides[] = {&o.strides, &i.strides};
  coalesce(s, strides, 2);
  if (s.ndim == 0) {
    s.ndim = 1;
    s.sizes[0] = 1;
    o.strides.v[0] = 1;  // kept: one element in, one out
    i.strides.v[0] = 1;
  }
  for (int d = 0; d < s.ndim; ++d) {
    if (s.sizes[d] == 0 && o.strides.v[d] != 0) return;  // no outputs at all
  }
  detail::VerboseCall call("reduce");
  if (call) {
    call.describe(i.dtype, "op%d numel%lld ndim%d", static_cast<int>(op), static_cast<long long>(numel(s)), s.ndim);
    // Along the innermost dim (rows folded), or across it (columns folded).
    call.path(o.strides.v[s.ndim - 1] == 0 ? "rows" : "columns");
  }
  active().reduce(op, s, o, i, p);
}

void reduce_ref(ReduceOp op, const Shape& shape, const Operand& out, const Operand& in, double p) {
  if (floating(in.dtype)) {
    reduce_ref_typed<double>(op, shape, out, in, p);
  } else {
    reduce_ref_typed<int64_t>(op, shape, out, in, p);
  }
}

void arg_reduce(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                const Operand& in) {
  Shape s = shape;
  Operand v = values, x = indices, i = in;
  Strides* strides[] = {&v.strides, &x.strides, &i.strides};
  coalesce_outer(s, strides, 3);
  if (numel(s) == 0) return;
  active().arg_reduce(is_max, s, v, x, i);
}

void arg_reduce_ref(bool is_max, const Shape& shape, const Operand& values, const Operand& indices,
                    const Operand& in) {
  const int64_t len = shape.sizes[shape.ndim - 1];
  const int64_t rows = len == 0 ? 0 : numel(shape) / len;
  Shape outer = shape;
  outer.ndim = shape.ndim - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t in_base = detail::unravel_offset(r, outer, in.strides);
    auto at = [&](int64_t j) {
      return floating(in.dtype) ? read<double>(in, in_base + j * in.strides.v[shape.ndim - 1])
                                : static_cast<double>(read<int64_t>(in, in_base + j * in.strides.v[shape.ndim - 1]));
    };
    int64_t best_i = 0;
    for (int64_t j = 1; j < len; ++j) {
      if (floating(in.dtype)) {
        if (ro::better(is_max, at(j), at(best_i))) best_i = j;
      } else {
        const int64_t a = read<int64_t>(in, in_base + j * in.strides.v[shape.ndim - 1]);
        const int64_t b = read<int64_t>(in, in_base + best_i * in.strides.v[shape.ndim - 1]);
        if (ro::better(is_max, a, b)) best_i = j;
      }
    }
    write<int64_t>(indices, detail::unravel_offset(r, outer, indices.strides), best_i);
    if (values.data != nullptr) {
      const int64_t src = in_base + best_i * in.strides.v[shape.ndim - 1];
      if (floating(in.dtype)) {
        write(values, detail::unravel_offset(r, outer, values.strides), read<double>(in, src));
      } else {
        write(values, detail::unravel_offset(r, outer, values.strides), read<int64_t>(in, src));
      }
    }
  }
}

void scan(ScanOp op, const Shape& shape, const Operand& out, const Operand& in) {
  Shape s = shape;
  Operand o = out, i = in;
  Strides* strides[] = {&o.strides, &i.strides};
  coalesce_outer(s, strides, 2);
  if (numel(s) == 0) return;
  active().scan(op, s, o, i);
}

void scan_ref(ScanOp op, const Shape& shape, const Operand& out, const Operand& in) {
  const int64_t len = shape.sizes[shape.ndim - 1];
  const int64_t rows = len == 0 ? 0 : numel(shape) / len;
  Shape outer = shape;
  outer.ndim = shape.ndim - 1;
  const int last = shape.ndim - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ib = detail::unravel_offset(r, outer, in.strides);
    const int64_t ob = detail::unravel_offset(r, outer, out.strides);
    if (floating(in.dtype)) {
      double acc = op == ScanOp::Sum ? 0 : 1;
      for (int64_t j = 0; j < len; ++j) {
        const double x = read<double>(in, ib + j * in.strides.v[last]);
        acc = op == ScanOp::Sum ? acc + x : acc * x;
        write(out, ob + j * out.strides.v[last], acc);
      }
    } else {
      int64_t acc = op == ScanOp::Sum ? 0 : 1;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t x = read<int64_t>(in, ib + j * in.strides.v[last]);
        acc = op == ScanOp::Sum ? acc + x : acc * x;
        write(out, ob + j * out.strides.v[last], acc);
      }
    }
  }
}

}  // namespace mlu::kernels
