// Note [Per-ISA variants]
// The one mechanism by which a kernel family has vectorised variants. The
// family's code is written once in `<family>/<family>_isa.cpp`, which CMake
// compiles once per instruction set (MLU_ISA_SOURCES_* in CMakeLists.txt),
// each time with that ISA's -m flags and -DMLU_ISA_NS=isa_<name>, so every
// definition lands in its own namespace mlu::kernels::isa_<name>. The file
// ends in one entry point returning the family's table of function pointers:
//
//   namespace mlu::kernels::MLU_ISA_NS {
//   const detail::SoftmaxRows& softmax_rows() { static const detail::SoftmaxRows rows{...}; return rows; }
//   }
//
// The family's table header declares the entry point in every ISA namespace,
// and the family's baseline file picks the active one per call:
//
//   MLU_KERNELS_DECLARE_ISA_VARIANTS(const detail::SoftmaxRows& softmax_rows())   // table header
//   const detail::SoftmaxRows& rows = MLU_KERNELS_ACTIVE_ISA_VARIANT(softmax_rows)();
//
// Invariants: the ISA files define nothing outside their namespace (the
// symbols check in CMakeLists.txt fails the build otherwise), so the linker
// never picks an AVX-512 copy of a function for a caller on a CPU without
// AVX-512; helpers they share with the baseline code are either inlined
// (always_inline) or defined inside MLU_ISA_NS. A family without an
// avx512bf16 variant runs its avx512 one there (isa.h).
//
// Code specific to one ISA inside an ISA file is chosen by the compiler's
// macros (#if defined(__AVX512F__) / __AVX2__); there are no [[gnu::target]]
// clones and no active_isa() checks outside isa.cpp and this header, but for
// one kind of entry: a routine only one ISA has. The GEMM's bfloat16 paths
// are two, the AVX512-BF16 dot products (gemm_dpbf16.cpp, an ISA file of the
// avx512bf16 variant only) and the AMX tiles (gemm_amx.cpp, of the avx512
// variant only, compiled with -mamx-tile -mamx-bf16 on top). Each is declared
// for every ISA like a table, taken by name with
// MLU_KERNELS_ISA_VARIANT_<isa>(name) (null in a build without that
// variant), and called only after gemm.cpp has tested active_isa() (and for
// AMX, amx_usable()): dpbf16_active() and amx_active(). Being ISA files, both
// are inside the symbols check. Where an
// entry measured faster as another ISA's compile of the same code, the ISA
// file copies it from that ISA's table: the avx2 and avx512 index tables take
// the baseline's gathers without vector gathers (index_isa.cpp), the avx512
// copy table the avx2 two-byte register transpose (copy_isa.cpp).
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "mlu_kernels/isa.h"

// The namespace tag of code compiled in the current file: isa_<name> in an
// ISA file, generic elsewhere. Headers of helpers that ISA files share with
// the baseline code put their definitions in `inline namespace
// MLU_KERNELS_ISA_TAG`, so each ISA's copies are symbols of their own
// (callers spell the names as before).
#ifdef MLU_ISA_NS
#define MLU_KERNELS_ISA_TAG MLU_ISA_NS
#else
#define MLU_KERNELS_ISA_TAG generic
#endif

// Declares `declaration` (a function) in each ISA's namespace.
#define MLU_KERNELS_DECLARE_ISA_VARIANTS(declaration)         \
  namespace mlu::kernels::isa_baseline { declaration; }       \
  namespace mlu::kernels::isa_avx2 { declaration; }           \
  namespace mlu::kernels::isa_avx512 { declaration; }         \
  namespace mlu::kernels::isa_avx512bf16 { declaration; }

// Which variants this build has: MLU_KERNELS_ISAS in CMakeLists.txt lists a prefix of baseline, avx2, avx512,
// avx512bf16 (a sanitizer build compiles only what it runs), and MLU_KERNELS_TOP_ISA is the index of its
// last entry, defined for the kernel library's own files; a file compiled without it sees all four. The
// list is a prefix because a variant may borrow entries from the ones below it (copy_isa.cpp, index_isa.cpp).
// detected_isa() never exceeds the top variant, so a variant that was not compiled is never selected; its
// pointer is null here and select_isa_variant steps down past it all the same.
#ifndef MLU_KERNELS_TOP_ISA
#define MLU_KERNELS_TOP_ISA 3
#endif
#if MLU_KERNELS_TOP_ISA >= 1
#define MLU_KERNELS_ISA_VARIANT_avx2(name) &::mlu::kernels::isa_avx2::name
#else
#define MLU_KERNELS_ISA_VARIANT_avx2(name) nullptr
#endif
#if MLU_KERNELS_TOP_ISA >= 2
#define MLU_KERNELS_ISA_VARIANT_avx512(name) &::mlu::kernels::isa_avx512::name
#else
#define MLU_KERNELS_ISA_VARIANT_avx512(name) nullptr
#endif
#if MLU_KERNELS_TOP_ISA >= 3
#define MLU_KERNELS_ISA_VARIANT_avx512bf16(name) &::mlu::kernels::isa_avx512bf16::name
#else
#define MLU_KERNELS_ISA_VARIANT_avx512bf16(name) nullptr
#endif

// The variant of `name` for the active ISA: a pointer to
// isa_<active>::name. MLU_KERNELS_ACTIVE_ISA_VARIANT_BF16 for the families
// that have an avx512bf16 variant (CMakeLists.txt: MLU_ISA_SOURCES_avx512bf16).
#define MLU_KERNELS_ACTIVE_ISA_VARIANT(name)                                                                           \
  ::mlu::kernels::detail::select_isa_variant(::mlu::kernels::active_isa(), &::mlu::kernels::isa_baseline::name,        \
                                             MLU_KERNELS_ISA_VARIANT_avx2(name), MLU_KERNELS_ISA_VARIANT_avx512(name), \
                                             nullptr)
#define MLU_KERNELS_ACTIVE_ISA_VARIANT_BF16(name)                                                                      \
  ::mlu::kernels::detail::select_isa_variant(::mlu::kernels::active_isa(), &::mlu::kernels::isa_baseline::name,        \
                                             MLU_KERNELS_ISA_VARIANT_avx2(name), MLU_KERNELS_ISA_VARIANT_avx512(name), \
                                             MLU_KERNELS_ISA_VARIANT_avx512bf16(name))

namespace mlu::kernels::detail {

// The variant for `isa`; an absent (null) variant falls back to the one below it: avx512bf16 is absent for
// the families without one, and any of them in a build that did not compile it.
template <class Fn>
Fn select_isa_variant(Isa isa, Fn baseline, std::type_identity_t<Fn> avx2, std::type_identity_t<Fn> avx512,
                      std::type_identity_t<Fn> avx512bf16) {
  switch (isa) {
    case Isa::Avx512Bf16:
      if (avx512bf16 != nullptr) return avx512bf16;
      [[fallthrough]];
    case Isa::Avx512:
      if (avx512 != nullptr) return avx512;
      [[fallthrough]];
    case Isa::Avx2:
      if (avx2 != nullptr) return avx2;
      [[fallthrough]];
    case Isa::Baseline: break;
  }
  return baseline;
}

}  // namespace mlu::kernels::detail

#ifdef MLU_ISA_NS
namespace mlu::kernels::MLU_ISA_NS {

// std::vector for ISA files: std::allocator under a name of this ISA's, so a
// container's out-of-line members (a destructor the compiler did not inline)
// are this ISA's own symbols, not a copy the linker could hand to the
// baseline code.
template <class T>
struct IsaAllocator : std::allocator<T> {
  using value_type = T;
  IsaAllocator() = default;
  template <class U>
  IsaAllocator(const IsaAllocator<U>&) noexcept {}  // NOLINT: converting, as std::allocator's
  template <class U>
  struct rebind {
    using other = IsaAllocator<U>;
  };
};
template <class T>
using vector = std::vector<T, IsaAllocator<T>>;

}  // namespace mlu::kernels::MLU_ISA_NS
#endif
