#include "mlu_kernels/gemm.h"

#include <algorithm>

#include <cmath>
#include <utility>
#include <vector>

#include "../common/convert.h"
#include "../common/dispatch.h"
#include "../common/scratch.h"
#include "gemm_amx.h"
#include "gemm_dpbf16.h"
#include "gemm_integer.h"
#include "gemm_dnnl.h"
#include "gemm_vendor.h"
#include "gemm_table.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

const detail::GemmKernels& active_kernels() {
  return MLU_KERNELS_ACTIVE_ISA_VARIANT(gemm_kernels)();
}

template <class T>
const detail::GemmKernel<T>& kernel_for() {
  if constexpr (std::is_same_v<T, double>) {
    return active_kernels().d;
  } else {
    return active_kernels().f;
  }
}

// A or B of one problem: dtype-erased, with element strides.
struct Source {
  const char* data;
  int64_t rs, cs;
};

// Problems below this many multiply-adds run on one thread: waking the
// others costs more than it saves.
constexpr int64_t kSerialMacs = int64_t{1} << 18;
// Single-threaded products up to this many multiply-adds may skip packing
// (Note [Unpacked small products]).
constexpr int64_t kDirectMacs = int64_t{1} << 21;

template <class T>
constexpr ScalarType compute_type() {
  return std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;
}

// Runs the micro-kernel over the A panels [panel_begin, panel_end) of a
// packed A block (kc deep) against every panel of a packed B block (cols
// columns), into C at c. The last rows take the micro-kernel for that many
// rows; a tile with fewer than nr columns goes through a local tile and is
// merged element by element.
template <class T>
void macro_kernel(const detail::GemmKernel<T>& kr, int layout, int64_t rows, int64_t cols, int64_t kc, const T* ap,
                  const T* bp, T* c, int64_t ldc, T alpha, T beta, int64_t panel_begin, int64_t panel_end) {
  const int mr = kr.mr, nr = kr.nr;
  const auto& micro = kr.micro[layout];
  T tile[detail::kMaxGemmRows * 64];
  for (int64_t pa = panel_begin; pa < panel_end; ++pa) {
    const int64_t ir = pa * mr, tile_rows = std::min<int64_t>(mr, rows - ir);
    const T* a = ap + ir * kr.kc;
    for (int64_t j = 0; j < cols; j += nr) {
      const int64_t tile_cols = std::min<int64_t>(nr, cols - j);
      const T* b = bp + j * kc;
      T* out = c + ir * ldc + j;
      if (tile_cols == nr) {
        micro[tile_rows](kc, a, b, out, ldc, alpha, beta);
        continue;
      }
      micro[tile_rows](kc, a, b, tile, nr, T(1), T(0));
      for (int64_t i = 0; i < tile_rows; ++i) {
        for (int64_t jj = 0; jj < tile_cols; ++jj) {
          T& o = out[i * ldc + jj];
          o = beta == T(0) ? alpha * tile[i * nr + jj] : alpha * tile[i * nr + jj] + beta * o;
        }
      }
    }
  }
}

// Note [GEMM blocking]
// The BLIS loop nest, in this orientation (vectors run along C's rows, so
// A's mr-row panels are the small ones): for each block of up to mc rows of
// A (in L3) and kc-deep slice of the depth, the A block is packed once, by
// all threads, into mr-row panels. Then each thread takes blocks of up to nc
// columns of B, packs one (kc x nc, in its own L2) and sweeps it: per A panel
// (in L1), every nr-column B panel. Column blocks are as many as a multiple
// of the threads; when there are fewer than threads, the A panels are split
// as well (each thread then packs the B block it uses). beta applies at the
// first depth slice, later slices add. C is in the compute type T with
// column stride 1 (gemm_one arranges that).
template <class T>
void gemm_blocked(int64_t m, int64_t n, int64_t k, T alpha, T beta, ScalarType type, const Source& a,
                  const Source& b, T* c, int64_t ldc, bool serial) {
  const detail::GemmKernel<T>& kr = kernel_for<T>();
  const int64_t es = static_cast<int64_t>(element_size(type));
  const int threads = serial || m * n * k < kSerialMacs ? 1 : num_threads();
  // Note [Unpacked small products]
  // Packing copies m k + k n elements to save cache misses in m n k
  // multiply-adds; for a small product on one thread the copies are a large
  // share and the operands are in cache anyway. Row-major A and B in the
  // compute type are read in place: B's rows are the micro-kernel's vectors
  // (so n must be a multiple of nr: no partial vectors past a row's end), A's
  // rows are broadcast from.
  if (threads == 1 && m * n * k <= kDirectMacs && type == compute_type<T>() && a.cs == 1 && b.cs == 1 &&
      n % kr.nr == 0) {
    const T* ad = reinterpret_cast<const T*>(a.data);
    const T* bd = reinterpret_cast<const T*>(b.data);
    for (int64_t ir = 0; ir < m; ir += kr.mr) {
      const int64_t rows = std::min<int64_t>(kr.mr, m - ir);
      for (int64_t j = 0; j < n; j += kr.nr) {
        kr.micro_direct[rows](k, ad + ir * a.rs, a.rs, bd + j, b.rs, c + ir * ldc + j, ldc, alpha, beta);
      }
    }
    return;
  }
  const int64_t b_panels = (n + kr.nr - 1) / kr.nr;
  const int64_t wanted = (n + kr.nc - 1) / kr.nc;
  const int64_t even = std::min<int64_t>((wanted + threads - 1) / threads * threads, b_panels);
  const int64_t nc = (b_panels + even - 1) / even * kr.nr;
  const int64_t n_blocks = (n + nc - 1) / nc;
  const bool row_panels = a.cs == 1 && a.rs != 1;  // Note [A panel layouts]
  thread_local std::vector<T> a_buffer;
  for (int64_t ic = 0; ic < m; ic += kr.mc) {
    const int64_t rows = std::min<int64_t>(kr.mc, m - ic);
    const int64_t a_panels = (rows + kr.mr - 1) / kr.mr;
    const int64_t m_parts = std::clamp<int64_t>(threads / n_blocks, 1, a_panels);
    for (int64_t pc = 0; pc < k; pc += kr.kc) {
      const int64_t kc = std::min<int64_t>(kr.kc, k - pc);
      T* ap = detail::grow(a_buffer, a_panels * kr.mr * kr.kc);
      const char* a_block = a.data + (ic * a.rs + pc * a.cs) * es;
      const int64_t pack_grain = threads == 1 ? a_panels : std::max<int64_t>(1, a_panels / (4 * threads));
      parallel_for(0, a_panels, pack_grain, [&](int64_t lo, int64_t hi) {
        kr.pack_a(ap + lo * kr.mr * kr.kc, a_block + lo * kr.mr * a.rs * es, type, a.rs, a.cs,
                  std::min(rows, hi * kr.mr) - lo * kr.mr, kc, row_panels);
      });
      const T beta_here = pc == 0 ? beta : T(1);
      const int64_t tasks = n_blocks * m_parts;
      parallel_for(0, tasks, threads == 1 ? tasks : 1, [&](int64_t lo, int64_t hi) {
        thread_local std::vector<T> b_buffer;
        T* bp = detail::grow(b_buffer, nc * kc);
        int64_t packed = -1;
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t jb = t / m_parts, part = t % m_parts;
          const int64_t jc = jb * nc, cols = std::min(nc, n - jc);
          if (packed != jb) {
            kr.pack_b(bp, b.data + (pc * b.rs + jc * b.cs) * es, type, b.rs, b.cs, kc, cols);
            packed = jb;
          }
          macro_kernel(kr, row_panels ? 1 : 0, rows, cols, kc, ap, bp, c + ic * ldc + jc, ldc, alpha, beta_here,
                       part * a_panels / m_parts, (part + 1) * a_panels / m_parts);
        }
      });
    }
  }
}

// C = beta * C, element by element (k == 0 or alpha == 0).
template <class T>
void scale_c(ScalarType type, int64_t m, int64_t n, const MatrixView& c, char* base, double beta) {
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      S* p = reinterpret_cast<S*>(base);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          S& e = p[i * c.row_stride + j * c.col_stride];
          e = detail::convert<S>(beta == 0 ? T(0) : static_cast<T>(beta) * detail::convert<T>(e));
        }
      }
    }
  });
}

// Moves C between its own dtype/strides and a row-major T workspace (row
// stride ldw), multiplying by `scale` on the way.
template <class T>
void c_to_workspace(ScalarType type, int64_t m, int64_t n, const MatrixView& c, const char* base, T* w, int64_t ldw,
                    T scale, bool in) {
  detail::dispatch(type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      S* p = reinterpret_cast<S*>(const_cast<char*>(base));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          S& e = p[i * c.row_stride + j * c.col_stride];
          if (in) {
            w[i * ldw + j] = scale * detail::convert<T>(e);
          } else {
            e = detail::convert<S>(scale * w[i * ldw + j]);
          }
        }
      }
    }
  });
}

// dst = src for an m x n matrix (element strides per row and column), the
// per-ISA converting copy between the two dtypes.
void copy_matrix(void* dst, ScalarType dst_type, int64_t dst_rs, int64_t dst_cs, const void* src,
                 ScalarType src_type, int64_t src_rs, int64_t src_cs, int64_t m, int64_t n) {
  Shape shape;
  shape.ndim = 2;
  shape.sizes[0] = m;
  shape.sizes[1] = n;
  Strides dst_strides{}, src_strides{};
  dst_strides.v[0] = dst_rs;
  dst_strides.v[1] = dst_cs;
  src_strides.v[0] = src_rs;
  src_strides.v[1] = src_cs;
  copy(dst, dst_type, dst_strides, src, src_type, src_strides, shape);
}

// Moves C (of c_type, e.g. BFloat16, any strides) to or from w, a row-major
// float workspace with row stride ldw, through the per-ISA converting copy
// (C rounded once on the way out), scaling the workspace by `scale` (after
// loading, before storing) and, when storing, adding `row` (n floats, or
// nullptr) to each of its rows.
void workspace_copy(ScalarType c_type, int64_t m, int64_t n, const MatrixView& c, char* c_base, float* w,
                    int64_t ldw, float scale, bool load, const float* row = nullptr) {
  const auto rescale = [&] {
    if (row != nullptr) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) w[i * ldw + j] = scale * w[i * ldw + j] + row[j];
      }
    } else if (scale != 1.0f) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) w[i * ldw + j] *= scale;
      }
    }
  };
  if (load) {
    copy_matrix(w, ScalarType::Float32, ldw, 1, c_base, c_type, c.row_stride, c.col_stride, m, n);
    rescale();
  } else {
    rescale();
    copy_matrix(c_base, c_type, c.row_stride, c.col_stride, w, ScalarType::Float32, ldw, 1, m, n);
  }
}

// C with one column (or one row): a matrix-vector product, no packing. The
// row case is the column case of C^T = B^T A^T.
template <class T>
void gemm_vector(ScalarType type, ScalarType c_type, int64_t m, int64_t n, int64_t k, T alpha, T beta,
                 const Source& a, const Source& b, const MatrixView& c, char* c_base) {
  const detail::GemmKernel<T>& kr = kernel_for<T>();
  const int64_t es = static_cast<int64_t>(element_size(type));
  const bool column = n == 1;
  const int64_t rows = column ? m : n;
  const Source matrix = column ? a : Source{b.data, b.cs, b.rs};
  const Source vector = column ? Source{b.data, b.rs, 0} : Source{a.data, a.cs, 0};
  const int64_t c_step = column ? c.row_stride : c.col_stride;
  thread_local std::vector<T> y_buffer;
  T* y = detail::grow(y_buffer, rows);
  const int64_t grain = std::max<int64_t>(1, kSerialMacs / std::max<int64_t>(k, 1));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    kr.gemv(y + lo, matrix.data + lo * matrix.rs * es, vector.data, type, matrix.rs, matrix.cs, vector.rs, hi - lo, k);
  });
  detail::dispatch(c_type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      S* out = reinterpret_cast<S*>(c_base);
      for (int64_t i = 0; i < rows; ++i) {
        S& e = out[i * c_step];
        e = detail::convert<S>(beta == T(0) ? alpha * y[i] : alpha * y[i] + beta * detail::convert<T>(e));
      }
    }
  });
}

// Note [GEMM bias row]
// addmm's 1-D self (a linear layer's bias) reaches the GEMM as GemmArgs::bias
// instead of being expanded into C first. Products whose C goes through a
// float workspace (Float16 / BFloat16 C) add beta * bias there, before C's
// one rounding: no copy of the expanded bias, no widening of C. Every other
// product writes the bias rows into C first and runs with beta as usual
// (bias_takes_store says which).
// The BFloat16 dot-product GEMM: only the avx512bf16 variant has it, and a build without that variant
// (MLU_KERNELS_ISAS) has a null pointer here, never called, since active_isa() stays below Avx512Bf16 there.
constexpr decltype(&isa_baseline::gemm_dpbf16_accumulate) kDpbf16Accumulate =
    MLU_KERNELS_ISA_VARIANT_avx512bf16(gemm_dpbf16_accumulate);

bool dpbf16_active() { return kDpbf16Accumulate != nullptr && active_isa() >= Isa::Avx512Bf16; }

// The BFloat16 GEMM on AMX tiles: only the avx512 variant has it (the avx512bf16 level runs that one too), a
// build without that variant has a null pointer here, and it runs only where the CPU and the OS allow the
// tiles (Note [AMX tiles]).
constexpr decltype(&isa_baseline::gemm_amx_bf16_accumulate) kAmxAccumulate =
    MLU_KERNELS_ISA_VARIANT_avx512(gemm_amx_bf16_accumulate);

bool amx_active() { return kAmxAccumulate != nullptr && active_isa() >= Isa::Avx512 && amx_usable(); }

bool bias_takes_store(const GemmArgs& args) {
  const bool half = args.dtype == ScalarType::BFloat16 || args.dtype == ScalarType::Float16;
  return half && !args.float_c && args.k > 0 && args.alpha != 0 && args.m > 1 && args.n > 1;
}

// beta * bias as n floats, in `buffer`.
const float* scaled_bias(const GemmArgs& args, std::vector<float>& buffer) {
  float* row = detail::grow(buffer, args.n);
  const auto* bias = static_cast<const char*>(args.bias);
  const int64_t es = static_cast<int64_t>(element_size(args.dtype));
  detail::dispatch(args.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      for (int64_t j = 0; j < args.n; ++j) {
        row[j] = static_cast<float>(args.beta) *
                 detail::convert<float>(*reinterpret_cast<const S*>(bias + j * args.bias_stride * es));
      }
    }
  });
  return row;
}

// C[t](i, j) = bias[j] for every matrix of the batch.
void bias_into_c(const GemmArgs& args) {
  const ScalarType c_type = args.float_c ? ScalarType::Float32 : args.dtype;
  const int64_t es = static_cast<int64_t>(element_size(c_type));
  for (int64_t t = 0; t < args.batch; ++t) {
    copy_matrix(static_cast<char*>(args.c.data) + t * args.batch_stride_c * es, c_type, args.c.row_stride,
                args.c.col_stride, args.bias, args.dtype, 0, args.bias_stride, args.m, args.n);
  }
}

// One matrix of the batch; returns the path it took (MLU_KERNELS_VERBOSE).
// serial: run on the calling thread (one item of a batch split over threads).
template <class T>
const char* gemm_one(const GemmArgs& args, int64_t t, bool serial) {
  const int64_t es = static_cast<int64_t>(element_size(args.dtype));
  const ScalarType c_type = args.float_c ? ScalarType::Float32 : args.dtype;
  int64_t m = args.m, n = args.n;
  Source a{static_cast<const char*>(args.a.data) + t * args.batch_stride_a * es, args.a.row_stride,
           args.a.col_stride};
  Source b{static_cast<const char*>(args.b.data) + t * args.batch_stride_b * es, args.b.row_stride,
           args.b.col_stride};
  MatrixView c = args.c;
  char* c_base = static_cast<char*>(c.data) + t * args.batch_stride_c * static_cast<int64_t>(element_size(c_type));
  if (args.k == 0 || args.alpha == 0) {
    scale_c<T>(c_type, m, n, c, c_base, args.beta);
    return "scale";
  }
  const T alpha = static_cast<T>(args.alpha);
  // Note [GEMM bias row]: with a bias, C is not read; beta * bias is added
  // to each row of the float workspace before the one rounding.
  const T beta = args.bias != nullptr ? T(0) : static_cast<T>(args.beta);
  thread_local std::vector<float> bias_buffer;
  const float* bias_row = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    if (args.bias != nullptr) bias_row = scaled_bias(args, bias_buffer);
  }
  if (n == 1 || m == 1) {
    gemm_vector<T>(args.dtype, c_type, m, n, args.k, alpha, beta, a, b, c, c_base);
    return "gemv";
  }
  if constexpr (std::is_same_v<T, float>) {
    // Note [oneDNN products]: C row-major in its own dtype.
    if (c.col_stride == 1 && detail::dnnl_gemm(args.dtype, c_type, m, n, args.k, args.alpha, beta, a.data, a.rs, a.cs,
                                               b.data, b.rs, b.cs, c_base, c.row_stride, bias_row, serial)) {
      return "dnnl";
    }
  }
  const bool in_compute_type = c_type == compute_type<T>();
  if (in_compute_type && c.col_stride != 1 && c.row_stride == 1) {
    // A column-major C: compute C^T = B^T A^T into it, which is row-major.
    std::swap(m, n);
    std::swap(a, b);
    std::swap(a.rs, a.cs);
    std::swap(b.rs, b.cs);
    std::swap(c.row_stride, c.col_stride);
  }
  if (in_compute_type && c.col_stride == 1) {
    if (detail::vendor_gemm(args.dtype, m, n, args.k, args.alpha, beta, a.data, a.rs, a.cs, b.data, b.rs, b.cs,
                            c_base, c.row_stride, serial)) {
      return "mkl";
    }
    if constexpr (std::is_same_v<T, float>) {
      // Float results of BFloat16 operands (args.float_c) with alpha 1 and
      // beta 0 or 1 accumulate in place (Note [BFloat16 dot products]).
      if (args.dtype == ScalarType::BFloat16 && dpbf16_active() && !amx_active() && alpha == T(1) &&
          (beta == T(0) || beta == T(1))) {
        kDpbf16Accumulate(m, n, args.k, reinterpret_cast<const BFloat16*>(a.data), a.rs, a.cs,
                          reinterpret_cast<const BFloat16*>(b.data), b.rs, b.cs, reinterpret_cast<T*>(c_base),
                          c.row_stride, beta == T(1), serial);
        return "dpbf16";
      }
    }
    gemm_blocked<T>(m, n, args.k, alpha, beta, args.dtype, a, b, reinterpret_cast<T*>(c_base), c.row_stride,
                    serial);
    return "blocked";
  }
  // C in another dtype (rounded once, at the end) or with no unit stride.
  thread_local std::vector<T> c_buffer;
  if constexpr (std::is_same_v<T, float>) {
    if (c_type != ScalarType::Float32 && gemm_library() == GemmLibrary::Mkl) {
      T* w = detail::grow(c_buffer, m * n);
      if (beta != T(0)) workspace_copy(c_type, m, n, c, c_base, w, n, 1.0f, true);
      if (detail::vendor_gemm(args.dtype, m, n, args.k, args.alpha, beta, a.data, a.rs, a.cs, b.data, b.rs, b.cs, w,
                              n, serial)) {
        workspace_copy(c_type, m, n, c, c_base, w, n, 1.0f, false, bias_row);
        return "mkl_workspace";
      }
    }
    const bool amx = args.dtype == ScalarType::BFloat16 && amx_active();
    const bool dot = args.dtype == ScalarType::BFloat16 && !amx && dpbf16_active();
    if (amx || dot) {
      // Note [AMX tiles], Note [BFloat16 dot products]: w = (beta / alpha) C,
      // w += A B, C = alpha w. For the tiles, w is padded to whole 32 x 32
      // blocks, which they load and store.
      const int64_t block = amx ? detail::kAmxBlock : 1;
      const int64_t ldw = (n + block - 1) / block * block, rows = (m + block - 1) / block * block;
      T* w = detail::grow(c_buffer, rows * ldw);
      if (beta != T(0)) workspace_copy(c_type, m, n, c, c_base, w, ldw, beta / alpha, true);
      const auto* ad = reinterpret_cast<const BFloat16*>(a.data);
      const auto* bd = reinterpret_cast<const BFloat16*>(b.data);
      if (amx) {
        kAmxAccumulate(m, n, args.k, ad, a.rs, a.cs, bd, b.rs, b.cs, w, ldw, beta != T(0), serial);
      } else {
        kDpbf16Accumulate(m, n, args.k, ad, a.rs, a.cs, bd, b.rs, b.cs, w, ldw, beta != T(0), serial);
      }
      workspace_copy(c_type, m, n, c, c_base, w, ldw, alpha, false, bias_row);
      return amx ? "amx" : "dpbf16";
    }
  }
  T* w = detail::grow(c_buffer, m * n);
  if (beta != T(0)) c_to_workspace<T>(c_type, m, n, c, c_base, w, n, T(1), true);
  gemm_blocked<T>(m, n, args.k, alpha, beta, args.dtype, a, b, w, n, serial);
  if constexpr (std::is_same_v<T, float>) {
    if (bias_row != nullptr) {
      workspace_copy(c_type, m, n, c, c_base, w, n, 1.0f, false, bias_row);
      return "blocked_workspace";
    }
  }
  c_to_workspace<T>(c_type, m, n, c, c_base, w, n, T(1), false);
  return "blocked_workspace";
}

// A float32 product with a bias row, run by oneDNN with the bias as the
// primitive's (Note [oneDNN products]) rather than written into C first;
// false where oneDNN declines it.
bool float32_bias_on_dnnl(const GemmArgs& args) {
  if (args.dtype != ScalarType::Float32 || args.batch != 1 || args.c.col_stride != 1 || args.m < 2 || args.n < 2 ||
      args.k < 1 || args.alpha != 1) {
    return false;
  }
  thread_local std::vector<float> bias_buffer;
  return detail::dnnl_gemm(args.dtype, ScalarType::Float32, args.m, args.n, args.k, 1.0, 0.0, args.a.data,
                           args.a.row_stride, args.a.col_stride, args.b.data, args.b.row_stride, args.b.col_stride,
                           args.c.data, args.c.row_stride, scaled_bias(args, bias_buffer), in_parallel_region());
}

// gemm() past the bias row: `args` has none, or one its path adds itself.
void gemm_without_bias_row(const GemmArgs& args, detail::VerboseCall& call) {
  if (args.dtype == ScalarType::ComplexFloat || args.dtype == ScalarType::ComplexDouble) {
    call.path("mkl_complex");
    detail::gemm_complex(args);
    return;
  }
  if (detail::is_gemm_integer(args.dtype)) {
    call.path("integer");
    detail::gemm_integer(args);  // Note [Integer products]
    return;
  }
  const auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t macs = args.m * args.n * std::max<int64_t>(args.k, 1);
    // Note [Batched GEMM]: many small products go one per thread; larger
    // ones one after another, each split over the threads.
    if (args.batch > 1 && args.batch >= num_threads() && macs < kSerialMacs * 64) {
      call.path("batched");  // each product on one thread
      parallel_for(0, args.batch, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) gemm_one<T>(args, t, true);
      });
      return;
    }
    const bool nested = in_parallel_region();  // e.g. per tile of the fused attention
    for (int64_t t = 0; t < args.batch; ++t) call.path(gemm_one<T>(args, t, nested));
  };
  if (args.dtype == ScalarType::Float64) {
    run(std::type_identity<double>{});
  } else {
    run(std::type_identity<float>{});
  }
}

}  // namespace

bool gemm_supports(ScalarType dtype) {
  if (dtype == ScalarType::ComplexFloat || dtype == ScalarType::ComplexDouble) return detail::vendor_gemm_linked();
  return dtype == ScalarType::Float32 || dtype == ScalarType::Float64 || dtype == ScalarType::Float16 ||
         dtype == ScalarType::BFloat16 || detail::is_gemm_integer(dtype);
}

void gemm(const GemmArgs& args) {
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0) return;
  detail::VerboseCall call("gemm");
  if (call) {
    call.describe(args.dtype, "m%lld n%lld k%lld batch%lld", static_cast<long long>(args.m),
                  static_cast<long long>(args.n), static_cast<long long>(args.k), static_cast<long long>(args.batch));
  }
  if (args.bias != nullptr && !bias_takes_store(args)) {  // Note [GEMM bias row]
    if (float32_bias_on_dnnl(args)) {
      call.path("dnnl");
      return;
    }
    bias_into_c(args);
    GemmArgs plain = args;
    plain.bias = nullptr;
    gemm_without_bias_row(plain, call);
    return;
  }
  gemm_without_bias_row(args, call);
}

void gemm_ref(const GemmArgs& args) {
  if (args.m <= 0 || args.n <= 0) return;
  detail::dispatch(args.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (detail::is_floating_v<S>) {
      const S* bias = static_cast<const S*>(args.bias);
      const auto bias_at = [&](int64_t j) { return static_cast<double>(detail::widen(bias[j * args.bias_stride])); };
      for (int64_t t = 0; t < args.batch; ++t) {
        const S* a = static_cast<const S*>(args.a.data) + t * args.batch_stride_a;
        const S* b = static_cast<const S*>(args.b.data) + t * args.batch_stride_b;
        char* c_base = static_cast<char*>(args.c.data) +
                       t * args.batch_stride_c * static_cast<int64_t>(element_size(args.float_c ? ScalarType::Float32 : args.dtype));
        for (int64_t i = 0; i < args.m; ++i) {
          for (int64_t j = 0; j < args.n; ++j) {
            long double acc = 0;
            for (int64_t p = 0; p < (args.alpha == 0 ? 0 : args.k); ++p) {
              acc += static_cast<long double>(detail::widen(a[i * args.a.row_stride + p * args.a.col_stride])) *
                     detail::widen(b[p * args.b.row_stride + j * args.b.col_stride]);
            }
            const int64_t at = i * args.c.row_stride + j * args.c.col_stride;
            if (args.float_c) {
              float& e = reinterpret_cast<float*>(c_base)[at];
              const double old = args.beta == 0 ? 0.0 : args.beta * (bias != nullptr ? bias_at(j) : static_cast<double>(e));
              e = static_cast<float>(args.alpha * static_cast<double>(acc) + old);
            } else {
              S& e = reinterpret_cast<S*>(c_base)[at];
              const double old =
                  args.beta == 0 ? 0.0 : args.beta * (bias != nullptr ? bias_at(j) : static_cast<double>(detail::widen(e)));
              e = detail::convert<S>(args.alpha * static_cast<double>(acc) + old);
            }
          }
        }
      }
    }
  });
}

}  // namespace mlu::kernels
