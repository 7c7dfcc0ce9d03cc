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

// Note [Teams]
// A team runs one body on several threads at once (SPMD, OpenMP's
// `parallel` region), for code that splits its own work by member index and
// waits for its fellow members (compiled Inductor kernels, whose OpenMP
// regions run as teams: see the GOMP entry points of
// torch_mlu/_inductor/include/torch_mlu/compiled_kernel_api.h, implemented
// in csrc/inductor/CompiledKernelLaunch.cpp). parallel_team(requested, fn) calls
// fn() on `size` threads concurrently, member 0 on the caller, the others on
// the pool's threads, and returns when all are done; inside, team_member()
// and team_size() say who is who, team_barrier() waits for every member and
// team_single() is true in exactly one member per encounter. Unlike a
// parallel_for chunk, a member's body is never run by another thread (a
// barrier would deadlock), so size = min(requested, num_threads()), and a
// team of 1 (the caller alone) when the pool is busy with another region or
// the caller is inside one: as OpenMP may give a team fewer threads than it
// asked for, a body must be correct for any size. requested <= 0 asks for
// num_threads(). Outside a team, team_member() is 0, team_size() 1, and
// team_barrier() / team_single() act as in a team of one.
class TeamFn {
 public:
  template <class F>
  TeamFn(const F& f)  // NOLINT: implicit by design, like RangeFn
      : object_(&f), call_([](const void* o) { (*static_cast<const F*>(o))(); }) {}
  void operator()() const { call_(object_); }

 private:
  const void* object_;
  void (*call_)(const void*);
};

void parallel_team(int requested, TeamFn fn);
int team_member();
int team_size();
void team_barrier();
bool team_single();

}  // namespace mlu::kernels
