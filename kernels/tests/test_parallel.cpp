#include "mlu_kernels/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace mlu::kernels {
namespace {

// Every index of [begin, end) is visited exactly once, in chunks of >= grain.
void expect_exact_cover(int64_t begin, int64_t end, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(end - begin));
  std::atomic<int64_t> short_chunks{0};
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    if (e - b < grain && e != end) ++short_chunks;
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i - begin)]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(short_chunks.load(), 0);
}

TEST(Parallel, CoversRangesExactlyOnce) {
  const int saved = num_threads();
  for (int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    for (int64_t n : {0, 1, 7, 100, 4096, 100003}) {
      for (int64_t grain : {1, 16, 1000}) expect_exact_cover(5, 5 + n, grain);
    }
  }
  set_num_threads(saved);
}

TEST(Parallel, UsesSeveralThreadsForLargeRanges) {
  const int saved = num_threads();
  set_num_threads(4);
  std::atomic<int> chunks{0};
  parallel_for(0, 1 << 20, 1, [&](int64_t, int64_t) { ++chunks; });
  EXPECT_EQ(chunks.load(), 4);
  set_num_threads(saved);
}

TEST(Parallel, NestedAndConcurrentCallersRunInline) {
  const int saved = num_threads();
  set_num_threads(3);
  std::atomic<int64_t> total{0};
  auto body = [&] {
    for (int round = 0; round < 200; ++round) {
      parallel_for(0, 3000, 10, [&](int64_t b, int64_t e) {
        // A nested region runs inline on this thread.
        parallel_for(b, e, 1, [&](int64_t nb, int64_t ne) { total += ne - nb; });
      });
    }
  };
  std::thread other(body);
  body();
  other.join();
  EXPECT_EQ(total.load(), 2 * 200 * 3000);
  set_num_threads(saved);
}

}  // namespace
}  // namespace mlu::kernels
