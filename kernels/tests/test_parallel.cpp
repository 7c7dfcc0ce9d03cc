#include "mlu_kernels/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// A team body in the style of an OpenMP region: every member publishes a
// value, waits at a barrier, then reads every other member's value; a
// `single` member sums them. Wrong without a real barrier or with two
// members sharing an index.
int64_t run_team_round(int requested, int round, std::atomic<int>* sizes_seen) {
  std::vector<int64_t> slots(64, -1);
  std::atomic<int64_t> checked{0};
  int64_t sum = -1;
  std::atomic<int> singles{0};
  parallel_team(requested, [&] {
    const int me = team_member(), n = team_size();
    slots[me] = int64_t{round} * 100 + me;
    team_barrier();
    for (int k = 0; k < n; ++k) {
      if (slots[k] == int64_t{round} * 100 + k) ++checked;
    }
    if (team_single()) {
      ++singles;
      sum = 0;
      for (int k = 0; k < n; ++k) sum += slots[k];
    }
    team_barrier();
    if (sizes_seen != nullptr && me == 0) sizes_seen[n]++;
  });
  EXPECT_EQ(singles.load(), 1);
  return checked.load() * 1000000 + sum;
}

TEST(ParallelTeam, MembersRunConcurrentlyAndMeetAtBarriers) {
  const int saved = num_threads();
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (int requested : {0, 1, 2, 3, 8}) {
      const int size = std::min(requested <= 0 ? threads : requested, threads);
      std::atomic<int> sizes[65] = {};
      for (int round = 0; round < 50; ++round) {
        const int64_t got = run_team_round(requested, round, sizes);
        // Nothing else uses the pool, so the team gets every thread it asks for.
        int64_t sum = 0;
        for (int k = 0; k < size; ++k) sum += int64_t{round} * 100 + k;
        ASSERT_EQ(got, int64_t{size} * size * 1000000 + sum) << threads << " " << requested;
      }
      EXPECT_EQ(sizes[size].load(), 50);
    }
  }
  set_num_threads(saved);
}

TEST(ParallelTeam, SingleIsClaimedOncePerEncounter) {
  const int saved = num_threads();
  set_num_threads(4);
  std::atomic<int> claims[10] = {};
  parallel_team(4, [&] {
    for (int encounter = 0; encounter < 10; ++encounter) {
      if (team_single()) ++claims[encounter];
      // No barrier between encounters (OpenMP's `single nowait`).
    }
  });
  for (auto& c : claims) EXPECT_EQ(c.load(), 1);
  set_num_threads(saved);
}

TEST(ParallelTeam, BusyPoolOrNestingGivesATeamOfOne) {
  const int saved = num_threads();
  set_num_threads(3);
  // Nested in a parallel_for chunk: the team is the calling thread alone.
  std::atomic<int> nested_sizes{0}, nested_calls{0};
  parallel_for(0, 3, 1, [&](int64_t, int64_t) {
    parallel_team(3, [&] {
      nested_sizes += team_size();
      ++nested_calls;
      team_barrier();  // a team of one never waits
    });
  });
  EXPECT_EQ(nested_sizes.load(), nested_calls.load());
  // Two threads starting teams at once: whoever finds the pool busy runs alone,
  // and every round still computes the right answer.
  std::atomic<int> sizes[65] = {};
  auto body = [&] {
    for (int round = 0; round < 300; ++round) {
      const int64_t got = run_team_round(3, round, sizes);
      const int64_t checked = got / 1000000;
      ASSERT_TRUE(checked == 1 || checked == 9) << checked;
    }
  };
  std::thread other(body);
  body();
  other.join();
  EXPECT_EQ(sizes[1].load() + sizes[3].load(), 600);
  set_num_threads(saved);
}

TEST(ParallelTeam, OutsideATeamActsAsATeamOfOne) {
  EXPECT_EQ(team_member(), 0);
  EXPECT_EQ(team_size(), 1);
  team_barrier();
  EXPECT_TRUE(team_single());
  EXPECT_TRUE(team_single());
}

}  // namespace
}  // namespace mlu::kernels
