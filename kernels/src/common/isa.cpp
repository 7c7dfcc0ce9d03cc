#include "mlu_kernels/isa.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <atomic>
#include <cstdlib>
#include <cstring>

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

bool amx_usable() {
  static const bool usable = [] {
    // MLU_KERNELS_AMX=0 leaves AMX unused, as on a host without it (comparisons).
    if (const char* env = std::getenv("MLU_KERNELS_AMX"); env != nullptr && std::strcmp(env, "0") == 0) return false;
#if defined(__x86_64__) && defined(__linux__)
    // CPUID.(7, 0):EDX bit 22 is AMX-BF16, bit 24 AMX-TILE; the kernel must
    // then grant the tile data state (XFEATURE_XTILEDATA = 18) to the process.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    if (((edx >> 22) & 1) == 0 || ((edx >> 24) & 1) == 0) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

}  // namespace mlu::kernels
