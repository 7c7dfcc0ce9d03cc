#include "mlu_kernels/parallel.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace mlu::kernels {

namespace {

// Note [Generation-tagged chunk counter]
// A region publishes its job by storing (generation << 32 | 0) in `next_`.
// Workers claim chunk k with a CAS from (generation << 32 | k) to k + 1, so a
// worker that woke up late for an older region can never claim a chunk of a
// newer one: its CAS sees a different generation and fails. The job fields are
// written before `next_` is published (release) and read after a successful
// claim (acquire), and stay unchanged until every claimed chunk reported done.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // leaked: workers may outlive static dtors
    return *pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }
  void set_threads(int n) { threads_.store(std::max(1, n), std::memory_order_relaxed); }

  bool try_run(int64_t begin, int64_t end, int64_t chunk, int64_t n_chunks, RangeFn fn) {
    std::unique_lock<std::mutex> region(region_mu_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    ensure_workers(static_cast<int>(n_chunks) - 1);
    fn_ = &fn;
    begin_ = begin;
    end_ = end;
    chunk_ = chunk;
    n_chunks_ = n_chunks;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t gen = ++generation_;
    next_.store(gen << 32, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      published_.store(gen, std::memory_order_release);
    }
    sleep_cv_.notify_all();
    in_region_ = true;
    work(gen);
    in_region_ = false;
    while (done_.load(std::memory_order_acquire) != n_chunks) _mm_pause();
    return true;
  }

  static bool in_region() { return in_region_; }

 private:
  Pool() : threads_(std::max(1u, std::thread::hardware_concurrency())) {}

  void ensure_workers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      workers_.emplace_back([this] { worker_loop(); });
      workers_.back().detach();
    }
  }

  // Claims and runs chunks of generation `gen` until none is left.
  void work(uint64_t gen) {
    for (;;) {
      uint64_t cur = next_.load(std::memory_order_acquire);
      if ((cur >> 32) != gen) return;
      const int64_t k = static_cast<int64_t>(cur & 0xffffffffu);
      if (k >= n_chunks_) return;
      if (!next_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) continue;
      const int64_t b = begin_ + k * chunk_;
      (*fn_)(b, std::min(end_, b + chunk_));
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void worker_loop() {
    in_region_ = true;  // nested parallel_for calls from a chunk run inline
    uint64_t seen = published_.load(std::memory_order_acquire);
    for (;;) {
      // Spin briefly (a region usually follows another), then sleep.
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (published_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < spin_until) {
        _mm_pause();
      }
      if (published_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(sleep_mu_);
        sleep_cv_.wait(lock, [&] { return published_.load(std::memory_order_acquire) != seen; });
      }
      seen = published_.load(std::memory_order_acquire);
      work(seen);
    }
  }

  std::atomic<int> threads_;
  std::mutex region_mu_;
  std::vector<std::thread> workers_;
  const RangeFn* fn_ = nullptr;
  int64_t begin_ = 0, end_ = 0, chunk_ = 0, n_chunks_ = 0;
  uint64_t generation_ = 0;  // guarded by region_mu_
  std::atomic<uint64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<uint64_t> published_{0};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  static thread_local bool in_region_;
};

thread_local bool Pool::in_region_ = false;

}  // namespace

int num_threads() { return Pool::instance().threads(); }

void set_num_threads(int n) { Pool::instance().set_threads(n); }

bool in_parallel_region() { return Pool::in_region(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  const int64_t range = end - begin;
  if (range <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = num_threads();
  const int64_t n_chunks = std::min<int64_t>(threads, (range + grain - 1) / grain);
  if (n_chunks <= 1 || Pool::in_region()) {
    fn(begin, end);
    return;
  }
  const int64_t chunk = std::max(grain, (range + n_chunks - 1) / n_chunks);
  const int64_t used = (range + chunk - 1) / chunk;
  if (!Pool::instance().try_run(begin, end, chunk, used, fn)) fn(begin, end);
}

}  // namespace mlu::kernels
