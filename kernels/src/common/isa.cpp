#include "mlu_kernels/isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../gemm/gemm_amx.h"
#include "isa_variants.h"

namespace mlu::kernels {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return __builtin_cpu_supports("avx512bf16") ? Isa::Avx512Bf16 : Isa::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
#endif
  return Isa::Baseline;
}

// The best ISA both the CPU and this build have (MLU_KERNELS_ISAS in CMakeLists.txt, Note [Per-ISA variants]).
Isa detect_compiled() {
  const Isa cpu = detect();
  const Isa top = static_cast<Isa>(MLU_KERNELS_TOP_ISA);
  return static_cast<int>(cpu) < static_cast<int>(top) ? cpu : top;
}

Isa from_env(Isa detected) {
  const char* env = std::getenv("MLU_KERNELS_ISA");
  Isa want = detected;
  if (env != nullptr) {
    if (std::strcmp(env, "baseline") == 0) want = Isa::Baseline;
    if (std::strcmp(env, "avx2") == 0) want = Isa::Avx2;
    if (std::strcmp(env, "avx512") == 0) want = Isa::Avx512;
    if (std::strcmp(env, "avx512bf16") == 0) want = Isa::Avx512Bf16;
  }
  return static_cast<int>(want) < static_cast<int>(detected) ? want : detected;
}

std::atomic<int>& active() {
  static std::atomic<int> isa{static_cast<int>(from_env(detected_isa()))};
  return isa;
}

}  // namespace

Isa detected_isa() {
  static const Isa isa = detect_compiled();
  return isa;
}

Isa active_isa() { return static_cast<Isa>(active().load(std::memory_order_relaxed)); }

void set_isa(Isa isa) {
  const Isa capped =
      static_cast<int>(isa) < static_cast<int>(detected_isa()) ? isa : detected_isa();
  active().store(static_cast<int>(capped), std::memory_order_relaxed);
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Baseline: return "baseline";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Bf16: return "avx512bf16";
  }
  return "?";
}

bool amx_usable() { return detail::amx_bf16_usable(); }

}  // namespace mlu::kernels
