// Measures the machine's attainable GEMM peak, for benchmarks/bench_gemm.py:
// the float32 micro-kernel of the active ISA on panels that stay in L1 (no
// memory traffic: the FMA units' rate), and, where the CPU allows AMX, a
// chain of independent TDPBF16PS on resident tiles (operands of ones: the
// rate with all-zero tiles is higher, not attainable). One thread, then all
// threads at once, each the best of three. Prints one JSON object.
//
//   build/kernels/mlu_gemm_peak [seconds per measurement]
#include <sys/syscall.h>
#include <unistd.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gemm/gemm_table.h"
#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"

namespace k = mlu::kernels;

namespace {

const k::detail::GemmKernel<float>& float_kernel() {
  switch (k::active_isa()) {
    case k::Isa::Avx512Bf16:
    case k::Isa::Avx512: return k::isa_avx512::gemm_kernels().f;
    case k::Isa::Avx2: return k::isa_avx2::gemm_kernels().f;
    case k::Isa::Baseline: break;
  }
  return k::isa_baseline::gemm_kernels().f;
}

// Flops per second of `body(iterations)` run by `threads` threads at once.
template <class Body>
double rate(int threads, double seconds, double flops_per_iteration, Body body) {
  std::atomic<long> total{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      while (!go.load()) {
      }
      long done = 0;
      while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
        body(64);
        done += 64;
      }
      total += done;
    });
  }
  go = true;
  for (auto& t : pool) t.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total.load() * flops_per_iteration / elapsed;
}

// The best of three measurements (the host is shared: a slow one is noise).
template <class F>
double best_of_three(F measure) {
  double best = 0;
  for (int r = 0; r < 3; ++r) best = std::max(best, measure());
  return best;
}

double float_peak(int threads, double seconds) {
  const auto& kr = float_kernel();
  const int64_t depth = 128;
  return rate(threads, seconds, 2.0 * kr.mr * kr.nr * depth, [&](int iterations) {
    thread_local std::vector<float> a(kr.mr * kr.kc, 1.0f), b(kr.nr * depth, 0.5f), c(kr.mr * kr.nr);
    for (int i = 0; i < iterations; ++i) kr.micro[0][kr.mr](depth, a.data(), b.data(), c.data(), kr.nr, 1.0f, 0.0f);
  });
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

[[gnu::target("amx-tile,amx-bf16")]] void tile_chain(int iterations) {
  thread_local bool configured = false;
  if (!configured) {
    static TileConfig config = [] {
      TileConfig c;
      for (int t = 0; t < 8; ++t) {
        c.rows[t] = 16;
        c.colsb[t] = 64;
      }
      return c;
    }();
    _tile_loadconfig(&config);
    static const std::vector<uint16_t> ones(16 * 32, 0x3f80);  // BFloat16 1.0: no all-zero shortcut
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ones.data(), 64);
    _tile_loadd(5, ones.data(), 64);
    _tile_loadd(6, ones.data(), 64);
    _tile_loadd(7, ones.data(), 64);
    configured = true;
  }
  for (int i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int threads = k::num_threads();
  std::printf("{\"isa\": \"%s\", \"threads\": %d, \"float32_gflops_1\": %.1f, \"float32_gflops_all\": %.1f",
              k::isa_name(k::active_isa()), threads, best_of_three([&] { return float_peak(1, seconds); }) / 1e9,
              best_of_three([&] { return float_peak(threads, seconds); }) / 1e9);
  if (k::active_isa() >= k::Isa::Avx512 && k::amx_usable()) {
    const double flops = 4.0 * 16 * 16 * 32 * 2;
    std::printf(", \"amx_bf16_gflops_1\": %.1f, \"amx_bf16_gflops_all\": %.1f",
                best_of_three([&] { return rate(1, seconds, flops, tile_chain); }) / 1e9,
                best_of_three([&] { return rate(threads, seconds, flops, tile_chain); }) / 1e9);
  }
  std::printf("}\n");
}
