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

// Note [Chunk slots]
// A region of generation G with n chunks sets slot k (k < n) to G << 1
// ("unclaimed"), then publishes job = G << 16 | n (release). A participant
// claims chunk k by a CAS of slot k from G << 1 to G << 1 | 1, so a worker
// that woke up late for an older region can never claim a chunk of a newer
// one: its CAS expects another generation and fails. The job fields are
// written before the job is published and stay unchanged until every chunk
// reported done. Participant p (the caller is 0, worker i is i) first claims
// its own chunk p, then steals the others: with a steady thread count a
// thread gets the same part of consecutive ranges (so an element-wise op finds
// its operands in the cache the previous op left them in, as OpenMP's static
// schedule does), and a late or descheduled thread's chunk still gets run.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // leaked: workers may outlive static dtors
    return *pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }
  void set_threads(int n) { threads_.store(std::clamp(n, 1, kMaxChunks), std::memory_order_relaxed); }

  // A team region (Note [Teams] in parallel.h) gives chunk k to participant k
  // alone: nobody steals it.
  bool try_run(int64_t begin, int64_t end, int64_t chunk, int64_t n_chunks, RangeFn fn, bool team = false) {
    std::unique_lock<std::mutex> region(region_mu_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    ensure_workers(static_cast<int>(n_chunks) - 1);
    fn_ = &fn;
    begin_ = begin;
    end_ = end;
    chunk_ = chunk;
    done_.store(0, std::memory_order_relaxed);
    const uint64_t job = ++generation_ << 16 | (team ? kTeamBit : 0) | static_cast<uint64_t>(n_chunks);
    for (int64_t k = 0; k < n_chunks; ++k) slots_[k].store(unclaimed(job), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      job_.store(job, std::memory_order_release);
    }
    sleep_cv_.notify_all();
    in_region_ = true;
    work(job, 0);
    in_region_ = false;
    // Yield, not spin: on few cores, a worker still running a chunk may need this core.
    while (done_.load(std::memory_order_acquire) != n_chunks) std::this_thread::yield();
    return true;
  }

  static bool in_region() { return in_region_; }

 private:
  static constexpr int kMaxChunks = 1 << 12;  // fits a job's 15 chunk-count bits
  static constexpr uint64_t kTeamBit = 1u << 15;

  // A job: the region's generation above a team bit and 15 bits of chunk count.
  static int64_t chunks_of(uint64_t job) { return static_cast<int64_t>(job & 0x7fffu); }
  static bool is_team(uint64_t job) { return (job & kTeamBit) != 0; }
  // A slot's value while its chunk of `job` is unclaimed (| 1: claimed).
  static uint64_t unclaimed(uint64_t job) { return (job >> 16) << 1; }

  Pool() : threads_(std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxChunks)) {}

  // Called before the region's job is published: a new worker starts out
  // having seen the previous job, so it takes part in this one (a team
  // cannot run without every member).
  void ensure_workers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      const int index = static_cast<int>(workers_.size()) + 1;
      const uint64_t seen = job_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { worker_loop(index, seen); });
      workers_.back().detach();
    }
  }

  // Runs chunk k of `job` if it is still unclaimed.
  void try_chunk(uint64_t job, int64_t k) {
    uint64_t expected = unclaimed(job);
    if (!slots_[k].compare_exchange_strong(expected, expected | 1, std::memory_order_acq_rel)) return;
    const int64_t b = begin_ + k * chunk_;
    (*fn_)(b, std::min(end_, b + chunk_));
    done_.fetch_add(1, std::memory_order_acq_rel);
  }

  // Participant `self` runs its own chunk of `job` (self < chunks), then any
  // left unclaimed; in a team, only its own.
  void work(uint64_t job, int self) {
    const int64_t n = chunks_of(job);
    if (is_team(job)) {
      if (self < n) try_chunk(job, self);
      return;
    }
    for (int64_t i = 0; i < n; ++i) try_chunk(job, (self + i) % n);
  }

  void worker_loop(int self, uint64_t seen) {
    in_region_ = true;  // nested parallel_for calls from a chunk run inline
    for (;;) {
      // Poll briefly (a region usually follows another), then sleep. Polls
      // yield: a spinning worker would hold a core the region's caller or
      // the host may be waiting for (Note [Spin before sleep] in the
      // runtime's queue.cpp).
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (job_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until) {
        std::this_thread::yield();
      }
      if (job_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(sleep_mu_);
        sleep_cv_.wait(lock, [&] { return job_.load(std::memory_order_acquire) != seen; });
      }
      seen = job_.load(std::memory_order_acquire);
      work(seen, self);
    }
  }

  std::atomic<int> threads_;
  std::mutex region_mu_;
  std::vector<std::thread> workers_;
  const RangeFn* fn_ = nullptr;
  int64_t begin_ = 0, end_ = 0, chunk_ = 0;
  uint64_t generation_ = 0;  // guarded by region_mu_
  std::atomic<uint64_t> slots_[kMaxChunks] = {};
  std::atomic<int64_t> done_{0};
  std::atomic<uint64_t> job_{0};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  static thread_local bool in_region_;
};

thread_local bool Pool::in_region_ = false;

// A team's shared state (Note [Teams] in parallel.h). The barrier counts
// arrivals; the last member to arrive resets the count and then advances the
// phase (release), which the others wait for, so a member's next arrival
// always follows the reset.
struct Team {
  explicit Team(int n) : size(n) {}
  int size;
  std::atomic<int> arrived{0};
  std::atomic<uint32_t> phase{0};
  std::atomic<uint64_t> singles{0};  // `single` encounters claimed so far
};

struct Membership {
  Team* team = nullptr;
  int member = 0;
  uint64_t singles_seen = 0;
};

thread_local Membership t_membership;

// Barrier waits are short when every member runs; after a while a waiter
// yields its core, since a member may be waiting for a core itself.
constexpr int kSpinsBeforeYield = 2000;

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

void parallel_team(int requested, TeamFn fn) {
  const int threads = num_threads();
  Team team(requested <= 0 ? threads : std::min(requested, threads));
  auto run_member = [&](int member) {
    const Membership outer = t_membership;
    t_membership = Membership{&team, member, 0};
    fn();
    t_membership = outer;
  };
  if (team.size > 1 && !Pool::in_region()) {
    auto member = [&](int64_t k, int64_t) { run_member(static_cast<int>(k)); };
    if (Pool::instance().try_run(0, team.size, 1, team.size, member, /*team=*/true)) return;
  }
  team.size = 1;
  run_member(0);
}

int team_member() { return t_membership.member; }

int team_size() { return t_membership.team != nullptr ? t_membership.team->size : 1; }

void team_barrier() {
  Team* team = t_membership.team;
  if (team == nullptr || team->size == 1) return;
  const uint32_t phase = team->phase.load(std::memory_order_acquire);
  if (team->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == team->size) {
    team->arrived.store(0, std::memory_order_relaxed);
    team->phase.store(phase + 1, std::memory_order_release);
    return;
  }
  for (int spins = 0; team->phase.load(std::memory_order_acquire) == phase; ++spins) {
    if (spins < kSpinsBeforeYield) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

bool team_single() {
  Membership& self = t_membership;
  const uint64_t encounter = self.singles_seen++;
  if (self.team == nullptr) return true;
  uint64_t expected = encounter;
  return self.team->singles.compare_exchange_strong(expected, encounter + 1, std::memory_order_acq_rel);
}

}  // namespace mlu::kernels
