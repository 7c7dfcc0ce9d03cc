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
//
// Kernels call kernels: a convolution's GEMMs get lines of their own, which
// say where its time goes. The data-movement kernels (copy, fill, pointwise)
// are declared Nested::Quiet: inside another kernel's call, or in a chunk of
// a parallel region, they are that kernel's buffers and tiles, one call per
// tile, and print nothing.
#pragma once

#include <chrono>
#include <cstdint>

#include "mlu_kernels/dtype.h"
#include "mlu_kernels/verbose.h"

namespace mlu::kernels::detail {

class VerboseCall {
 public:
  enum class Nested : bool { Log, Quiet };

  explicit VerboseCall(const char* kernel, Nested nested = Nested::Log)
      : kernel_(verbose() && enter(nested) ? kernel : nullptr) {
    if (kernel_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~VerboseCall() {
    if (kernel_ != nullptr) {
      leave();
      print();
    }
  }
  VerboseCall(const VerboseCall&) = delete;
  VerboseCall& operator=(const VerboseCall&) = delete;

  explicit operator bool() const { return kernel_ != nullptr; }
  // A string literal (the pointer is kept).
  void path(const char* path) { path_ = path; }
  // The dtype and a printf-style description of the problem's sizes.
  [[gnu::format(printf, 3, 4)]] void describe(ScalarType dtype, const char* format, ...);

 private:
  // Whether this call logs (with logging on); if so it counts as the thread's
  // current kernel call until leave().
  static bool enter(Nested nested);
  static void leave();
  void print() const;

  const char* kernel_;
  const char* path_ = "-";
  ScalarType dtype_ = ScalarType::Float32;
  bool has_dtype_ = false;
  char problem_[96] = "-";
  std::chrono::steady_clock::time_point start_;
};

// An int64_t as describe's %lld reads it.
inline long long lld(int64_t v) { return v; }

}  // namespace mlu::kernels::detail
