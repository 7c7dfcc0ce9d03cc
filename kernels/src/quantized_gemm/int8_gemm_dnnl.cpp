#include "int8_gemm_dnnl.h"

#if MLU_KERNELS_WITH_DNNL
#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "../common/vendor/dnnl_support.h"
#include "mlu_kernels/gemm.h"
#include "mlu_kernels/parallel.h"
#endif

namespace mlu::kernels::detail {

#if MLU_KERNELS_WITH_DNNL

// Note [int8 products on oneDNN]
bool dnnl_int8_gemm(const Int8GemmArgs& args) {
  if (gemm_library() != GemmLibrary::Dnnl || args.k < 1) return false;
  using dnnl::memory;
  try {
    dnnl_one_thread();
    const int threads = in_parallel_region() ? 1 : num_threads();
    // Row blocks when C is at least as tall as it is wide, else column blocks.
    const bool by_rows = args.m >= args.n;
    const int64_t total = by_rows ? args.m : args.n;
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, total));
    const auto a_type = args.a_dtype == ScalarType::UInt8 ? memory::data_type::u8 : memory::data_type::s8;
    std::vector<dnnl::matmul::primitive_desc> descs;
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t size = (p + 1) * total / parts - p * total / parts;
      const int64_t rows = by_rows ? size : args.m, cols = by_rows ? args.n : size;
      const memory::desc ad({rows, args.k}, a_type, {args.a_rs, args.a_cs});
      const memory::desc bd({args.k, cols}, memory::data_type::s8, {args.b_rs, args.b_cs});
      const memory::desc cd({rows, cols}, memory::data_type::s32, {args.ldc, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), dnnl_engine());
      if (std::strstr(pd.impl_info_str(), "ref") != nullptr) return false;
      descs.push_back(pd);
    }
    std::atomic<bool> ok{true};
    parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
      dnnl_one_thread();
      for (int64_t p = lo; p < hi; ++p) {
        try {
          const int64_t first = p * total / parts;
          const int64_t i0 = by_rows ? first : 0, j0 = by_rows ? 0 : first;
          const auto& pd = descs[static_cast<size_t>(p)];
          dnnl::stream stream(dnnl_engine());
          auto* ap = static_cast<unsigned char*>(const_cast<void*>(args.a)) + i0 * args.a_rs;
          auto* bp = const_cast<int8_t*>(args.b) + j0 * args.b_cs;
          int32_t* cp = args.c + i0 * args.ldc + j0;
          std::unordered_map<int, memory> call{{DNNL_ARG_SRC, memory(pd.src_desc(), dnnl_engine(), ap)},
                                               {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), dnnl_engine(), bp)},
                                               {DNNL_ARG_DST, memory(pd.dst_desc(), dnnl_engine(), cp)}};
          dnnl::matmul(pd).execute(stream, call);
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

bool dnnl_int8_gemm(const Int8GemmArgs&) { return false; }

#endif

}  // namespace mlu::kernels::detail
