// Batched FFTs on oneMKL's DFTI (mlu_kernels/fft.h). The descriptor set-up
// mirrors PyTorch's CPU (_plan_mkl_fft in aten/src/ATen/native/mkl/
// SpectralOps.cpp) call for call; the split of the batch is ours.
#include "mlu_kernels/fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "../common/vendor/dfti.h"
#include "../common/vendor/mkl.h"
#include "mlu_kernels/parallel.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

using vendor::dfti_handle;
using vendor::dfti_long;
namespace dfti = vendor::dfti_enum;

// A part gets at least this many signal elements: below it the hand-off to
// a pool thread costs more than the transforms it would take over.
constexpr int64_t kMinElementsPerPart = 1 << 14;

const vendor::Dfti& lib() { return *vendor::dfti(); }

std::string message(dfti_long status) {
  const char* text = lib().error_message(status);
  return text != nullptr ? std::string(text) : "oneMKL DFTI error " + std::to_string(status);
}

int64_t signal_numel(const FftSpec& s) {
  int64_t n = 1;
  for (int d = 0; d < s.signal_ndim; ++d) n *= s.sizes[d];
  return n;
}

size_t in_element_size(const FftSpec& s) {
  const size_t real = element_size(s.real_type);
  return s.kind == FftKind::R2C ? real : 2 * real;
}

size_t out_element_size(const FftSpec& s) {
  const size_t real = element_size(s.real_type);
  return s.kind == FftKind::C2R ? real : 2 * real;
}

// Creates and commits the descriptor for `count` transforms of `s`; "" or
// the library's message (the handle is freed on failure).
std::string commit(const FftSpec& s, int64_t count, dfti_handle* out) {
  const auto& L = lib();
  const bool single = s.real_type == ScalarType::Float32;
  const int domain = s.kind == FftKind::C2C ? dfti::kComplex : dfti::kReal;
  dfti_handle h = nullptr;
  dfti_long status;
  if (s.signal_ndim == 1) {
    status = (single ? L.create_s_1d : L.create_d_1d)(&h, domain, static_cast<dfti_long>(s.sizes[0]));
  } else {
    dfti_long sizes[kMaxFftDims];
    for (int d = 0; d < s.signal_ndim; ++d) sizes[d] = s.sizes[d];
    status = (single ? L.create_s_md : L.create_d_md)(&h, domain, static_cast<dfti_long>(s.signal_ndim), sizes);
  }
  if (status != 0) return message(status);
  // The first stride of DFTI's arrays is an offset, zero here.
  dfti_long in_strides[kMaxFftDims + 1] = {0}, out_strides[kMaxFftDims + 1] = {0};
  for (int d = 0; d < s.signal_ndim; ++d) {
    in_strides[d + 1] = s.in_strides[d];
    out_strides[d + 1] = s.out_strides[d];
  }
  auto set = [&](auto... args) {
    if (status == 0) status = L.set_value(h, args...);
  };
  set(dfti::kPlacement, dfti::kNotInplace);
  set(dfti::kNumberOfTransforms, static_cast<dfti_long>(count));
  set(dfti::kInputDistance, static_cast<dfti_long>(s.in_distance));
  set(dfti::kOutputDistance, static_cast<dfti_long>(s.out_distance));
  set(dfti::kInputStrides, in_strides);
  set(dfti::kOutputStrides, out_strides);
  if (s.kind != FftKind::C2C) set(dfti::kConjugateEvenStorage, dfti::kComplexComplex);
  if (s.scale != 1.0) set(s.forward ? dfti::kForwardScale : dfti::kBackwardScale, s.scale);
  set(dfti::kThreadLimit, static_cast<dfti_long>(1));
  if (status == 0) {
    vendor::SerialVendorCall serial;  // plan for one thread
    status = L.commit(h);
  }
  if (status != 0) {
    L.free_descriptor(&h);
    return message(status);
  }
  *out = h;
  return "";
}

template <class C>
void fill_conjugate_range(int64_t begin, int64_t end, int ndim, const int64_t* h, const uint8_t* mirrored,
                          const int64_t* is, const char* in, const int64_t* os, char* out) {
  std::vector<int64_t> index(ndim);
  int64_t rest = begin;
  for (int d = 0; d < ndim; ++d) {
    index[d] = rest % h[d];
    rest /= h[d];
  }
  auto out_index = [&](int d, int64_t i) { return mirrored[d] ? (h[d] - i) % h[d] : i; };
  for (int64_t linear = begin; linear < end;) {
    const char* in_row = in;
    char* out_row = out;
    for (int d = 1; d < ndim; ++d) {
      in_row += index[d] * is[d];
      out_row += out_index(d, index[d]) * os[d];
    }
    const int64_t stop = std::min(h[0], index[0] + (end - linear));
    for (int64_t i = index[0]; i < stop; ++i) {
      const C value = *reinterpret_cast<const C*>(in_row + i * is[0]);
      *reinterpret_cast<C*>(out_row + out_index(0, i) * os[0]) = std::conj(value);
    }
    linear += stop - index[0];
    index[0] = 0;
    for (int d = 1; d < ndim && ++index[d] == h[d]; ++d) index[d] = 0;
  }
}

}  // namespace

void fft_fill_conjugate_symmetry(ScalarType complex_type, int ndim, const int64_t* half_sizes, const uint8_t* mirrored,
                                 const int64_t* in_strides, const void* in, const int64_t* out_strides, void* out) {
  detail::VerboseCall call("fft_fill_conjugate_symmetry");
  if (call) call.describe(complex_type, "ndim%d", ndim);
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) numel *= half_sizes[d];
  if (numel == 0) return;
  const auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(out);
  parallel_for(0, numel, 1 << 15, [&](int64_t lo, int64_t hi) {
    if (complex_type == ScalarType::ComplexFloat) {
      fill_conjugate_range<std::complex<float>>(lo, hi, ndim, half_sizes, mirrored, in_strides, src, out_strides, dst);
    } else {
      fill_conjugate_range<std::complex<double>>(lo, hi, ndim, half_sizes, mirrored, in_strides, src, out_strides,
                                                 dst);
    }
  });
}

bool fft_available() {
#if MLU_KERNELS_WITH_MKL
  return vendor::dfti() != nullptr;
#else
  return false;
#endif
}

std::shared_ptr<const FftPlan> FftPlan::create(const FftSpec& spec, int max_parts, std::string* error) {
  std::shared_ptr<FftPlan> plan(new FftPlan());
  plan->spec_ = spec;
  const int64_t by_size = std::max<int64_t>(1, spec.batch * signal_numel(spec) / kMinElementsPerPart);
  const int64_t parts = std::max<int64_t>(1, std::min({static_cast<int64_t>(max_parts), spec.batch, by_size}));
  // An empty batch gets one part of no transforms, which DFTI refuses as it
  // does on the CPU.
  plan->chunk_ = (spec.batch + parts - 1) / parts;
  plan->parts_ = plan->chunk_ == 0 ? 1 : static_cast<int>((spec.batch + plan->chunk_ - 1) / plan->chunk_);
  const int64_t tail = spec.batch - (plan->parts_ - 1) * plan->chunk_;
  std::string failure = commit(spec, plan->chunk_, &plan->chunk_descriptor_);
  if (failure.empty() && tail != plan->chunk_) failure = commit(spec, tail, &plan->tail_descriptor_);
  if (!failure.empty()) {
    *error = failure;
    return nullptr;
  }
  return plan;
}

FftPlan::~FftPlan() {
  if (chunk_descriptor_ != nullptr) lib().free_descriptor(&chunk_descriptor_);
  if (tail_descriptor_ != nullptr) lib().free_descriptor(&tail_descriptor_);
}

std::string FftPlan::execute(const void* in, void* out) const {
  detail::VerboseCall call("fft");
  if (call) call.describe(spec_.real_type, "ndim%d parts%d", spec_.signal_ndim, parts_);
  call.path(spec_.kind == FftKind::C2C ? "c2c" : spec_.kind == FftKind::R2C ? "r2c" : "c2r");
  const auto& L = lib();
  const auto compute = spec_.forward ? L.compute_forward : L.compute_backward;
  const size_t in_step = in_element_size(spec_) * spec_.in_distance * chunk_;
  const size_t out_step = out_element_size(spec_) * spec_.out_distance * chunk_;
  // One status per part; parts never exceed the pool's threads by much.
  std::unique_ptr<dfti_long[]> status(new dfti_long[parts_]());
  parallel_for(0, parts_, 1, [&](int64_t lo, int64_t hi) {
    vendor::SerialVendorCall serial;
    for (int64_t p = lo; p < hi; ++p) {
      const bool tail = p == parts_ - 1 && tail_descriptor_ != nullptr;
      auto* src = const_cast<char*>(static_cast<const char*>(in)) + p * in_step;
      auto* dst = static_cast<char*>(out) + p * out_step;
      status[p] = compute(tail ? tail_descriptor_ : chunk_descriptor_, src, dst);
    }
  });
  for (int p = 0; p < parts_; ++p) {
    if (status[p] != 0) return message(status[p]);
  }
  return "";
}

}  // namespace mlu::kernels
