#include "gemm_dnnl.h"

#if MLU_KERNELS_WITH_DNNL
#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "../common/vendor/dnnl_support.h"
#include "mlu_kernels/copy.h"
#include "mlu_kernels/gemm.h"
#include "mlu_kernels/parallel.h"
#endif

namespace mlu::kernels::detail {

#if MLU_KERNELS_WITH_DNNL

bool dnnl_gemm_linked() { return dnnl_loaded(); }

namespace {

using dnnl::memory;

// Products below this many multiply-adds run our kernel: a primitive's
// descriptor costs tens of microseconds to make. Float32: 128 x 128 x 64 took
// 13 us through oneDNN, 11 on ours; 256 x 256 x 64 28 against 40.
constexpr int64_t kSmallestMacs = int64_t{1} << 20;
constexpr int64_t kSmallestMacsFloat32 = int64_t{1} << 21;

struct Block {
  int64_t i0, rows, j0, cols;
};

// C cut into `threads` blocks: row blocks when C is at least as tall as it
// is wide, else column blocks.
std::vector<Block> blocks(int64_t m, int64_t n, int threads) {
  std::vector<Block> out;
  const bool by_rows = m >= n;
  const int64_t total = by_rows ? m : n;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, total));
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t lo = p * total / parts, hi = (p + 1) * total / parts;
    out.push_back(by_rows ? Block{lo, hi - lo, 0, n} : Block{0, m, lo, hi - lo});
  }
  return out;
}

memory::data_type data_type(ScalarType type) {
  return type == ScalarType::BFloat16 ? memory::data_type::bf16
         : type == ScalarType::Float16 ? memory::data_type::f16
                                       : memory::data_type::f32;
}

}  // namespace

bool dnnl_gemm(ScalarType type, ScalarType c_type, int64_t m, int64_t n, int64_t k, double alpha, double beta,
               const void* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs, void* c,
               int64_t ldc, const float* bias, bool serial) {
  const bool half = type == ScalarType::BFloat16 || type == ScalarType::Float16;
  if (gemm_library() != GemmLibrary::Dnnl || (!half && type != ScalarType::Float32)) return false;
  // beta 0 only: a block that failed could then be rerun on our kernel
  // whatever the others wrote. (A linear layer's bias is the bias row, with
  // beta 0.)
  if (alpha != 1 || beta != 0 || m * n * k < (half ? kSmallestMacs : kSmallestMacsFloat32) || k < 1) return false;
  try {
    dnnl_one_thread();
    const int threads = serial || in_parallel_region() ? 1 : num_threads();
    const std::vector<Block> cut = blocks(m, n, threads);
    const memory::data_type dt = data_type(type), ct = data_type(c_type);
    // One primitive per distinct block shape, made before any block runs;
    // empty when oneDNN would not use brgemm for one of them.
    std::vector<size_t> shape_of;
    const auto make_shapes = [&](int64_t lda_rows, int64_t lda_cols) {
      std::vector<std::pair<Block, dnnl::matmul::primitive_desc>> made;
      std::vector<size_t> of;
      for (const Block& blk : cut) {
        auto at = std::find_if(made.begin(), made.end(), [&](const auto& s) {
          return s.first.rows == blk.rows && s.first.cols == blk.cols;
        });
        if (at == made.end()) {
          const memory::desc ad({blk.rows, k}, dt, {lda_rows, lda_cols}), bd({k, blk.cols}, dt, {b_rs, b_cs});
          const memory::desc cd({blk.rows, blk.cols}, ct, {ldc, 1});
          const auto desc =
              bias != nullptr
                  ? dnnl::matmul::desc(ad, bd, memory::desc({1, blk.cols}, memory::data_type::f32, memory::format_tag::ab), cd)
                  : dnnl::matmul::desc(ad, bd, cd);
          dnnl::matmul::primitive_desc pd(desc, dnnl_engine());
          // Only oneDNN's brgemm kernels beat ours; its other implementations
          // (gemm:jit for a transposed A or a short C, reference loops) do not.
          if (std::strstr(pd.impl_info_str(), "brg") == nullptr) return decltype(made){};
          made.emplace_back(blk, pd);
          at = made.end() - 1;
        }
        of.push_back(static_cast<size_t>(at - made.begin()));
      }
      shape_of = std::move(of);
      return made;
    };
    auto shapes = make_shapes(a_rs, a_cs);
    if (shapes.empty() && a_cs != 1) {
      // A transposed (a weight gradient's): brgemm wants it row-major, and a
      // row-major copy costs far less than the product.
      thread_local std::vector<float> a_rows;  // room for float32; 16-bit elements fill the front half
      a_rows.resize(static_cast<size_t>(m * k));
      Shape shape;
      shape.ndim = 2;
      shape.sizes[0] = m;
      shape.sizes[1] = k;
      copy(a_rows.data(), type, Strides{{k, 1}}, a, type, Strides{{a_rs, a_cs}}, shape);
      a = a_rows.data();
      a_rs = k;
      a_cs = 1;
      shapes = make_shapes(a_rs, a_cs);
    }
    if (shapes.empty()) return false;
    const size_t es = element_size(type), ces = element_size(c_type);
    std::atomic<bool> ok{true};
    parallel_for(0, static_cast<int64_t>(cut.size()), 1, [&](int64_t lo, int64_t hi) {
      dnnl_one_thread();
      for (int64_t p = lo; p < hi; ++p) {
        try {
          const Block& blk = cut[static_cast<size_t>(p)];
          const auto& pd = shapes[shape_of[static_cast<size_t>(p)]].second;
          dnnl::stream stream(dnnl_engine());
          auto* ap = static_cast<unsigned char*>(const_cast<void*>(a)) + static_cast<size_t>(blk.i0 * a_rs) * es;
          auto* bp = static_cast<unsigned char*>(const_cast<void*>(b)) + static_cast<size_t>(blk.j0 * b_cs) * es;
          auto* cp = static_cast<unsigned char*>(c) + static_cast<size_t>(blk.i0 * ldc + blk.j0) * ces;
          std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(pd.src_desc(), dnnl_engine(), ap)},
                                               {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), dnnl_engine(), bp)},
                                               {DNNL_ARG_DST, memory(pd.dst_desc(), dnnl_engine(), cp)}};
          if (bias != nullptr) {
            args.emplace(DNNL_ARG_BIAS, memory(pd.bias_desc(), dnnl_engine(), const_cast<float*>(bias + blk.j0)));
          }
          dnnl::matmul(pd).execute(stream, args);
          stream.wait();
        } catch (const dnnl::error&) {
          ok.store(false, std::memory_order_relaxed);
        }
      }
    });
    return ok.load(std::memory_order_relaxed);
  } catch (const dnnl::error&) {
    return false;
  }
}

#else  // !MLU_KERNELS_WITH_DNNL

bool dnnl_gemm_linked() { return false; }

bool dnnl_gemm(ScalarType, ScalarType, int64_t, int64_t, int64_t, double, double, const void*, int64_t, int64_t,
               const void*, int64_t, int64_t, void*, int64_t, const float*, bool) {
  return false;
}

#endif

}  // namespace mlu::kernels::detail
