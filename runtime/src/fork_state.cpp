#include "fork_state.h"

#include <pthread.h>

#include <atomic>
#include <mutex>

#include "error_state.h"

namespace mlu::detail {
namespace {

std::atomic<bool> g_started{false};
std::atomic<bool> g_forked_child{false};

void mark_child() {
  if (g_started.load()) g_forked_child.store(true);
}

}  // namespace

void note_runtime_started() {
  if (g_started.load(std::memory_order_relaxed)) return;
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, mark_child); });
  g_started.store(true);
}

bool in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

mluError_t fail_in_forked_child() {
  return fail(mluErrorForkedChild,
              "this process was forked after the MLU runtime started in its parent; a forked child cannot use "
              "the parent's devices, queues or memory");
}

}  // namespace mlu::detail
