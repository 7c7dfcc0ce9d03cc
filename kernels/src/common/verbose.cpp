#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mlu_kernels/isa.h"
#include "mlu_kernels/parallel.h"
#include "verbose_call.h"

namespace mlu::kernels {

namespace {

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("MLU_KERNELS_VERBOSE");
    return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
  }()};
  return on;
}

}  // namespace

bool verbose() { return enabled().load(std::memory_order_relaxed); }

void set_verbose(bool on) { enabled().store(on, std::memory_order_relaxed); }

namespace detail {

namespace {

// Kernel calls being logged on this thread, outermost first.
thread_local int t_depth = 0;

}  // namespace

bool VerboseCall::enter(Nested nested) {
  if (nested == Nested::Quiet && (t_depth > 0 || in_parallel_region())) return false;
  ++t_depth;
  return true;
}

void VerboseCall::leave() { --t_depth; }

void VerboseCall::describe(ScalarType dtype, const char* format, ...) {
  dtype_ = dtype;
  has_dtype_ = true;
  va_list args;
  va_start(args, format);
  std::vsnprintf(problem_, sizeof(problem_), format, args);
  va_end(args);
}

void VerboseCall::print() const {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  // One fprintf per line: lines of concurrent calls (several device threads) do not interleave.
  std::fprintf(stderr, "mlu_kernels_verbose,exec,%s,%s,%s,%s,%s,%.3f\n", kernel_, isa_name(active_isa()), path_,
               has_dtype_ ? scalar_type_name(dtype_) : "-", problem_, ms);
}

}  // namespace detail
}  // namespace mlu::kernels
