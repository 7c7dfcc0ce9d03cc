// Batched discrete Fourier transforms: a plan (a committed oneMKL DFTI
// descriptor for one layout) and its execution with the batch split over the
// device's compute threads.
//
// A plan is what PyTorch's CPU op commits on every call (mkl/SpectralOps.cpp
// _plan_mkl_fft): the same precision, domain, sizes, strides, distances,
// conjugate-even storage and scale, so a transform gives the CPU's values.
// Only the batch is split: `parts` chunks of consecutive transforms, each
// run by one pool thread with the library's threading off, sharing the
// committed descriptors (DFTI allows concurrent computes on one).
//
// Invariants: a plan is immutable after create() and may be executed from any
// number of threads at once; strides and distances count elements of the
// data they describe (complex elements for complex data); `sizes` are the
// full (two-sided) signal sizes; for R2C the output, and for C2R the input,
// holds the first sizes[last] / 2 + 1 elements of the last signal dim
// (conjugate-even, CCE storage).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

enum class FftKind : int8_t { C2C, R2C, C2R };

// DFTI takes up to seven signal dims; PyTorch's ops at most three.
constexpr int kMaxFftDims = 3;

struct FftSpec {
  ScalarType real_type = ScalarType::Float32;  // Float32 or Float64
  FftKind kind = FftKind::C2C;
  bool forward = true;  // R2C: true, C2R: false
  int signal_ndim = 1;
  int64_t sizes[kMaxFftDims] = {};
  int64_t in_strides[kMaxFftDims] = {};
  int64_t out_strides[kMaxFftDims] = {};
  int64_t batch = 1;
  int64_t in_distance = 0;
  int64_t out_distance = 0;
  double scale = 1.0;  // applied in the direction of the transform
};

// Whether the process has a DFTI (and the build allows vendor libraries).
bool fft_available();

class FftPlan {
 public:
  // Commits the descriptors for `spec` with the batch split into at most
  // `max_parts` chunks (fewer where the batch is small). nullptr with
  // DFTI's message in *error when the library refuses the layout.
  static std::shared_ptr<const FftPlan> create(const FftSpec& spec, int max_parts, std::string* error);

  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  // Runs every transform of the batch from `in` to `out` (out of place,
  // never overlapping). "" or DFTI's error message.
  std::string execute(const void* in, void* out) const;

  const FftSpec& spec() const { return spec_; }
  int parts() const { return parts_; }

 private:
  FftPlan() = default;

  FftSpec spec_;
  int parts_ = 1;
  int64_t chunk_ = 0;              // transforms per part but the last
  void* chunk_descriptor_ = nullptr;
  void* tail_descriptor_ = nullptr;  // the last part's, where it is shorter
};

// Fills the redundant half of a two-sided spectrum from the half a one-sided
// transform wrote (PyTorch's NOTE "Fourier Transform Conjugate Symmetry" in
// SpectralOpsUtils.h): for every multi-index i over `half_sizes` (dim 0
// fastest), out[o(i)] = conj(in[i]), where in[i] is at `in` + sum i_d *
// in_strides[d] and o(i) at `out` + sum j_d * out_strides[d] with j_d =
// (half_sizes[d] - i_d) % half_sizes[d] where mirrored[d] is nonzero, i_d elsewhere.
// Strides in bytes, any sign; `in` and `out` elements never coincide.
// `complex_type`: ComplexFloat or ComplexDouble.
void fft_fill_conjugate_symmetry(ScalarType complex_type, int ndim, const int64_t* half_sizes, const uint8_t* mirrored,
                                 const int64_t* in_strides, const void* in, const int64_t* out_strides, void* out);

}  // namespace mlu::kernels
