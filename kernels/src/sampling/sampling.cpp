#include "mlu_kernels/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "mlu_kernels/half.h"
#include "mlu_kernels/philox.h"
#include "../common/verbose_call.h"

namespace mlu::kernels {
namespace {

uint64_t draw64(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  auto u = philox4x32(seed, subsequence, offset);
  return (static_cast<uint64_t>(u[0]) << 32) | u[1];
}

// Uniform in (0, 1], 53 bits: never 0, so logs and divisions stay finite.
double open_uniform(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  return static_cast<double>((draw64(seed, subsequence, offset) >> 11) + 1) * 0x1.0p-53;
}

double weight_at(const void* probs, ScalarType dtype, int64_t index) {
  switch (dtype) {
    case ScalarType::Float16: return to_float(static_cast<const Half*>(probs)[index]);
    case ScalarType::BFloat16: return to_float(static_cast<const BFloat16*>(probs)[index]);
    case ScalarType::Float32: return static_cast<const float*>(probs)[index];
    default: return static_cast<const double*>(probs)[index];
  }
}

}  // namespace

void randperm(int64_t* out, int64_t n, uint64_t seed, uint64_t offset) {
  detail::VerboseCall call("randperm");
  if (call) call.describe(ScalarType::Int64, "n%lld", detail::lld(n));
  std::iota(out, out + n, int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    uint64_t j = draw64(seed, static_cast<uint64_t>(i), offset) % static_cast<uint64_t>(i + 1);
    std::swap(out[i], out[j]);
  }
}

MultinomialStatus multinomial(int64_t* out, const void* probs, ScalarType dtype, int64_t rows, int64_t categories,
                              int64_t row_stride, int64_t col_stride, int64_t samples, bool replacement,
                              uint64_t seed, uint64_t offset) {
  detail::VerboseCall call("multinomial");
  if (call) {
    call.describe(dtype, "rows%lld categories%lld samples%lld", detail::lld(rows), detail::lld(categories),
                  detail::lld(samples));
  }
  call.path(replacement ? "replacement" : "no_replacement");
  if (!replacement && samples > categories) return MultinomialStatus::NotEnoughCategories;
  std::vector<double> cdf(static_cast<size_t>(categories));
  std::vector<std::pair<double, int64_t>> keys;
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    int64_t positive = 0;
    for (int64_t c = 0; c < categories; ++c) {
      double w = weight_at(probs, dtype, r * row_stride + c * col_stride);
      if (!(w >= 0) || !std::isfinite(w)) return MultinomialStatus::NegativeOrNonFinite;
      total += w;
      positive += w > 0;
      cdf[c] = total;
    }
    if (total <= 0) return MultinomialStatus::ZeroSum;
    if (!replacement && samples > positive) return MultinomialStatus::NotEnoughCategories;
    int64_t* row_out = out + r * samples;
    if (replacement) {
      for (int64_t s = 0; s < samples; ++s) {
        double target = open_uniform(seed, static_cast<uint64_t>(r * samples + s), offset) * total;
        auto it = std::lower_bound(cdf.begin(), cdf.end(), target);
        int64_t c = std::min<int64_t>(it - cdf.begin(), categories - 1);
        while (c > 0 && weight_at(probs, dtype, r * row_stride + c * col_stride) == 0) --c;  // never a 0-weight class
        row_out[s] = c;
      }
      continue;
    }
    keys.clear();
    for (int64_t c = 0; c < categories; ++c) {
      double w = weight_at(probs, dtype, r * row_stride + c * col_stride);
      if (w == 0) continue;
      double u = open_uniform(seed, static_cast<uint64_t>(r * categories + c), offset);
      keys.emplace_back(-std::log(u) / w, c);
    }
    std::partial_sort(keys.begin(), keys.begin() + samples, keys.end());
    for (int64_t s = 0; s < samples; ++s) row_out[s] = keys[s].second;
  }
  return MultinomialStatus::Ok;
}

}  // namespace mlu::kernels
