// Stress: many queues on both devices, many tiny tasks, chains of cross-queue
// event waits, concurrent launchers, allocation churn. Sized to finish in a
// second or two normally and well under a minute under ThreadSanitizer.
#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

constexpr int kQueues = 8;  // alternating between devices 0 and 1

std::vector<std::unique_ptr<ScopedQueue>> make_queues() {
  std::vector<std::unique_ptr<ScopedQueue>> queues;
  for (int i = 0; i < kQueues; ++i) queues.push_back(std::make_unique<ScopedQueue>(i % 2));
  return queues;
}

}  // namespace

TEST(Stress, ManyTinyTasksOnManyQueues) {
  constexpr int kTasksPerQueue = 2500;  // 20k in all
  // Each counter is touched only by its queue's device thread, then read after
  // synchronization: plain ints, so ThreadSanitizer checks the ordering.
  std::vector<long> sums(kQueues, 0);
  std::vector<int> last(kQueues, -1);
  std::vector<int> out_of_order(kQueues, 0);
  std::atomic<int> total{0};
  auto queues = make_queues();
  for (int i = 0; i < kTasksPerQueue; ++i) {
    for (int q = 0; q < kQueues; ++q) {
      ASSERT_EQ(mluLaunchTask(*queues[q], "tiny", [&, q, i] {
                  if (last[q] != i - 1) ++out_of_order[q];
                  last[q] = i;
                  sums[q] += i;
                  total.fetch_add(1, std::memory_order_relaxed);
                }),
                mluSuccess);
    }
  }
  EXPECT_EQ(mluDeviceSynchronizeOn(0), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
  EXPECT_EQ(total.load(), kQueues * kTasksPerQueue);
  for (int q = 0; q < kQueues; ++q) {
    EXPECT_EQ(sums[q], long(kTasksPerQueue) * (kTasksPerQueue - 1) / 2);
    EXPECT_EQ(last[q], kTasksPerQueue - 1);
    EXPECT_EQ(out_of_order[q], 0);
  }
}

TEST(Stress, EventChainAcrossQueuesAndDevices) {
  // A token passes round-robin through 8 queues on 2 devices: queue k waits
  // for the event queue k-1 re-recorded in the previous step, then increments
  // a plain counter. Every increment must see exactly the previous value; a
  // wait that let a queue run early is a lost ordering (and a data race that
  // ThreadSanitizer reports).
  constexpr int kRounds = 250;
  long counter = 0;
  std::atomic<int> mismatches{0};
  std::vector<std::unique_ptr<ScopedEvent>> events;
  for (int k = 0; k < kQueues; ++k) {
    events.push_back(std::make_unique<ScopedEvent>(k % 2 == 0 ? mluEventDisableTiming : mluEventDefault));
  }
  auto queues = make_queues();
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < kQueues; ++k) {
      mluQueue_t q = *queues[k];
      const ScopedEvent& previous = *events[(k + kQueues - 1) % kQueues];
      ASSERT_EQ(mluQueueWaitEvent(q, previous), mluSuccess);
      long expected = long(round) * kQueues + k;
      ASSERT_EQ(mluLaunchTask(q, "increment", [&counter, &mismatches, expected] {
                  if (counter != expected) mismatches.fetch_add(1, std::memory_order_relaxed);
                  counter = expected + 1;
                }),
                mluSuccess);
      ASSERT_EQ(mluEventRecord(*events[k], q), mluSuccess);
    }
  }
  ASSERT_EQ(mluEventSynchronize(*events[kQueues - 1]), mluSuccess);
  EXPECT_EQ(counter, long(kRounds) * kQueues);
  EXPECT_EQ(mismatches.load(), 0);
  for (auto& q : queues) EXPECT_EQ(mluQueueQuery(*q), mluSuccess);
}

TEST(Stress, FanInWaitsOnReRecordedEvents) {
  // Each round, 7 producer queues add to their own slot and re-record their
  // event; the consumer queue waits for all 7 events and checks every slot
  // holds exactly the round's value.
  constexpr int kRounds = 300;
  constexpr int kProducers = kQueues - 1;
  std::vector<long> slots(kProducers, 0);
  std::atomic<int> mismatches{0};
  long consumer_rounds = 0;
  std::vector<std::unique_ptr<ScopedEvent>> events;
  for (int p = 0; p < kProducers; ++p) events.push_back(std::make_unique<ScopedEvent>(mluEventDisableTiming));
  ScopedEvent consumed(mluEventDisableTiming);
  auto queues = make_queues();
  mluQueue_t consumer = *queues[kProducers];
  for (int round = 1; round <= kRounds; ++round) {
    for (int p = 0; p < kProducers; ++p) {
      mluQueue_t q = *queues[p];
      // Do not overwrite a slot before the consumer has read the previous round.
      ASSERT_EQ(mluQueueWaitEvent(q, consumed), mluSuccess);
      ASSERT_EQ(mluLaunchTask(q, "produce", [&slots, p, round] { slots[p] = round; }), mluSuccess);
      ASSERT_EQ(mluEventRecord(*events[p], q), mluSuccess);
    }
    for (int p = 0; p < kProducers; ++p) ASSERT_EQ(mluQueueWaitEvent(consumer, *events[p]), mluSuccess);
    ASSERT_EQ(mluLaunchTask(consumer, "consume", [&, round] {
                for (int p = 0; p < kProducers; ++p) {
                  if (slots[p] != round) mismatches.fetch_add(1, std::memory_order_relaxed);
                }
                ++consumer_rounds;
              }),
              mluSuccess);
    ASSERT_EQ(mluEventRecord(consumed, consumer), mluSuccess);
  }
  ASSERT_EQ(mluDeviceSynchronizeOn(0), mluSuccess);
  ASSERT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(consumer_rounds, kRounds);
}

TEST(Stress, ConcurrentLaunchersOnOneQueue) {
  // Several host threads launch onto the same queue, far past the ring's
  // capacity, so launchers also queue up for free slots.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2500;
  std::vector<std::vector<int>> seen(kThreads);  // appended by the device thread only
  std::atomic<int> launch_failures{0};
  ScopedQueue queue(1);
  Gate gate;
  // Hold the queue at first so that the ring fills up.
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (mluLaunchTask(queue, "append", [&seen, t, i] { seen[t].push_back(i); }) != mluSuccess) {
          launch_failures.fetch_add(1);
        }
      }
    });
  }
  std::this_thread::sleep_for(20ms);  // let the launchers run into the full ring
  gate.open();
  for (auto& l : launchers) l.join();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(launch_failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), size_t(kPerThread)) << "thread " << t;
    for (int i = 0; i < kPerThread; ++i) ASSERT_EQ(seen[t][i], i) << "each thread's launches keep their order";
  }
}

TEST(Stress, ConcurrentLaunchersOnTheDefaultQueues) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1000;
  std::atomic<long> sum[2] = {0, 0};
  std::vector<std::thread> launchers;
  for (int t = 0; t < kThreads; ++t) {
    launchers.emplace_back([&, t] {
      int device = t % 2;
      EXPECT_EQ(mluSetDevice(device), mluSuccess);
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_EQ(mluLaunchTask(nullptr, "add", [&sum, device, i] { sum[device] += i; }), mluSuccess);
      }
      EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
    });
  }
  for (auto& l : launchers) l.join();
  EXPECT_EQ(mluDeviceSynchronizeOn(0), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
  long per_thread = long(kPerThread) * (kPerThread - 1) / 2;
  EXPECT_EQ(sum[0].load(), 2 * per_thread);
  EXPECT_EQ(sum[1].load(), 2 * per_thread);
}

TEST(Stress, AllocationChurnFromSeveralThreads) {
  // Threads allocate, fill with a "kernel", copy back to pinned memory and
  // free asynchronously (or synchronously), on both devices at once. At the
  // end every byte is back and every copy saw its own pattern.
  constexpr int kThreads = 4;
  constexpr int kIterations = 300;
  size_t before[2] = {free_bytes(0), free_bytes(1)};
  std::atomic<int> bad_data{0}, api_failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      int device = t % 2;
      ScopedDevice on(device);
      PinnedBuffer out(kIterations * sizeof(int));
      ScopedQueue queue(device);
      int* results = out.as<int>();
      std::mt19937 rng(t);
      for (int i = 0; i < kIterations; ++i) {
        size_t bytes = 64 + rng() % (64 * 1024);
        void* p = nullptr;
        if (mluMalloc(&p, bytes) != mluSuccess) {
          api_failures.fetch_add(1);
          continue;
        }
        int value = t * 100000 + i;
        auto* ints = static_cast<int*>(p);
        size_t n = bytes / sizeof(int);
        bool ok = mluLaunchTask(queue, "fill", [ints, n, value] {
                    for (size_t k = 0; k < n; ++k) ints[k] = value;
                  }) == mluSuccess;
        ok = ok && mluMemcpyAsync(results + i, ints + n - 1, sizeof(int), mluMemcpyDeviceToHost, queue) ==
                       mluSuccess;
        // Mostly stream-ordered frees; sometimes the synchronous kind.
        ok = ok && (i % 10 == 0 ? mluFree(p) : mluFreeAsync(p, queue)) == mluSuccess;
        if (!ok) api_failures.fetch_add(1);
      }
      if (mluQueueSynchronize(queue) != mluSuccess) api_failures.fetch_add(1);
      for (int i = 0; i < kIterations; ++i) {
        if (results[i] != t * 100000 + i) bad_data.fetch_add(1);
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(api_failures.load(), 0);
  EXPECT_EQ(bad_data.load(), 0);
  EXPECT_EQ(free_bytes(0), before[0]) << "every byte must return to device 0";
  EXPECT_EQ(free_bytes(1), before[1]) << "every byte must return to device 1";
}

TEST(Stress, OneEventSharedByManyHostThreads) {
  // Two threads keep re-recording one event on their own queues while two
  // others query it and make their queues wait on it. Only the outcome of each
  // call is checked (any record may be current); ThreadSanitizer checks the rest.
  constexpr int kIterations = 2000;
  std::atomic<int> bad_status{0};
  ScopedEvent event;
  auto queues = make_queues();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      mluQueue_t q = *queues[t];
      for (int i = 0; i < kIterations; ++i) {
        mluError_t status = mluSuccess;
        if (t < 2) {
          if (mluLaunchTask(q, "tiny", [] {}) != mluSuccess) bad_status.fetch_add(1);
          status = mluEventRecord(event, q);
        } else {
          status = mluEventQuery(event);
          if (status == mluErrorNotReady) status = mluSuccess;
          if (status == mluSuccess) status = mluQueueWaitEvent(q, event);
          if (status == mluSuccess && i % 100 == 0) status = mluEventSynchronize(event);
        }
        if (status != mluSuccess) bad_status.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad_status.load(), 0);
  EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronizeOn(0), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
}
