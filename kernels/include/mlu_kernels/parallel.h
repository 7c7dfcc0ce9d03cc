// Splitting a kernel's work over the device's compute threads.
//
// One process-wide pool of compute threads serves every device thread. A
// parallel region runs its chunks on the pool and on the calling thread;
// while one region runs, another caller (a second device thread) or a nested
// call runs its whole range inline, so regions never wait on each other and
// never deadlock. Chunk boundaries depend only on (range, grain, thread
// count), so a kernel whose chunks are independent gives the same result
// however the chunks are scheduled. Thread p (the caller is 0) runs chunk p
// when it is free to, so consecutive regions over the same range hand each
// thread the data it touched last time (Note [Chunk slots] in parallel.cpp).
#pragma once

#include <cstdint>

namespace mlu::kernels {

// Number of threads a region may use, including the caller (>= 1). Default:
// the host's hardware threads; the plugin sets it from TORCH_MLU_DEVICE_CORES.
int num_threads();
void set_num_threads(int n);

// A non-owning reference to a callable void(int64_t begin, int64_t end).
class RangeFn {
 public:
  template <class F>
  RangeFn(const F& f)  // NOLINT: implicit by design, like std::function_ref
      : object_(&f), call_([](const void* o, int64_t b, int64_t e) {
          (*static_cast<const F*>(o))(b, e);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  const void* object_;
  void (*call_)(const void*, int64_t, int64_t);
};

// Whether the caller is running a chunk of a parallel region (a nested
// parallel_for would run inline): kernels called from a chunk take their
// single-threaded paths.
bool in_parallel_region();

// Calls fn over disjoint chunks covering [begin, end), each at least `grain`
// long (except a short last one), possibly concurrently; returns when all are
// done. With end - begin <= grain the caller runs fn(begin, end) itself.
void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn);

}  // namespace mlu::kernels
