// The log line of one kernel call (mlu_kernels/verbose.h). Declared at the
// top of a kernel entry point; the kernel names its path as it chooses it,
// and describes its problem only when logging is on:
//
//   detail::VerboseCall call("softmax");
//   if (call) call.describe(out.dtype, "rows%lld len%lld", rows, len);
//   call.path(by_columns ? "columns" : "rows");
//
// The line is printed when the object goes out of scope. Invariant: with
// logging off nothing is formatted, allocated or timed.
#pragma once

#include <chrono>
#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/verbose.h"

namespace mlu::kernels::detail {

class VerboseCall {
 public:
  explicit VerboseCall(const char* kernel) : kernel_(verbose() ? kernel : nullptr) {
    if (kernel_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~VerboseCall() {
    if (kernel_ != nullptr) print();
  }
  VerboseCall(const VerboseCall&) = delete;
  VerboseCall& operator=(const VerboseCall&) = delete;

  explicit operator bool() const { return kernel_ != nullptr; }
  // A string literal (the pointer is kept).
  void path(const char* path) { path_ = path; }
  // The dtype and a printf-style description of the problem's sizes.
  [[gnu::format(printf, 3, 4)]] void describe(ScalarType dtype, const char* format, ...);

 private:
  void print() const;

  const char* kernel_;
  const char* path_ = "-";
  ScalarType dtype_ = ScalarType::Float32;
  bool has_dtype_ = false;
  char problem_[96] = "-";
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mlu::kernels::detail
