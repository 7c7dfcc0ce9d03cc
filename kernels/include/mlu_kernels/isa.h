// Runtime instruction-set selection for the vectorised kernels.
//
// Kernels that vectorise are compiled once per instruction set (per-ISA
// translation units, see README "Vectorisation") and the best one the CPU
// supports is picked at run time. MLU_KERNELS_ISA=baseline|avx2|avx512|
// avx512bf16 caps the choice (tests use it to exercise every variant on one
// machine); a value above what the CPU supports is lowered to what it supports.
//
// The levels are ordered: each includes the ones below it. Avx512Bf16 is
// AVX-512 plus AVX512-BF16 (float -> bfloat16 in one instruction); only the
// pointwise engine has a variant for it, every other kernel runs its AVX-512
// variant there, so "has AVX-512" is `active_isa() >= Isa::Avx512`.
#pragma once

namespace mlu::kernels {

enum class Isa : int { Baseline = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3 };

// The best ISA this CPU supports among the variants this build compiled (all
// four unless CMake's MLU_KERNELS_ISAS lists fewer, as the sanitizer builds do).
Isa detected_isa();
// The ISA kernels use now: detected_isa(), capped by MLU_KERNELS_ISA at first
// use and by set_isa.
Isa active_isa();
// Caps the ISA used from now on (lowered to detected_isa()). Not meant to be
// called while kernels run on other threads.
void set_isa(Isa isa);
const char* isa_name(Isa isa);
// Whether the BFloat16 GEMM may use Intel AMX tiles: the CPU has AMX-BF16
// and the OS let this process use the tile registers (asked once), unless
// MLU_KERNELS_AMX=0.
bool amx_usable();

}  // namespace mlu::kernels
