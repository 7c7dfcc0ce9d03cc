// Queues: asynchronous in-order execution, concurrency between queues,
// lifetime, priorities, back-pressure and sticky device errors.
#include <array>
#include <atomic>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

TEST(Queue, LaunchReturnsBeforeTheTaskRuns) {
  std::atomic<bool> started{false}, finished{false};
  ScopedQueue queue(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "gated", [&, f = gate.future()](TaskContext& ctx) {
              started = true;
              if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("gate timed out");
              finished = true;
            }),
            mluSuccess);
  // The launch came back although the task cannot finish before the gate opens.
  EXPECT_FALSE(finished);
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
  EXPECT_TRUE(eventually([&] { return started.load(); })) << "the device thread never started the task";
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_TRUE(finished);
  EXPECT_EQ(mluQueueQuery(queue), mluSuccess);
}

TEST(Queue, EmptyQueueIsComplete) {
  ScopedQueue queue(1);
  EXPECT_EQ(mluQueueQuery(queue), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(mluQueueQuery(nullptr), mluSuccess);
}

TEST(Queue, TasksRunInLaunchOrder) {
  std::vector<int> order;  // only the device thread touches it until synchronize
  ScopedQueue queue(0);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(mluLaunchTask(queue, "append", [&order, i] { order.push_back(i); }), mluSuccess);
  }
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  std::vector<int> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  uint64_t count = 0;
  EXPECT_EQ(mluQueueGetLaunchCount(queue, &count), mluSuccess);
  EXPECT_EQ(count, 1000u);
}

TEST(Queue, DefaultQueueRunsInOrderToo) {
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(mluLaunchTask(nullptr, "append", [&order, i] { order.push_back(i); }), mluSuccess);
  }
  ASSERT_EQ(mluQueueSynchronize(nullptr), mluSuccess);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(Queue, TaskContextKnowsItsDevice) {
  int seen0 = -1, seen1 = -1;
  ScopedQueue q0(0), q1(1);
  ASSERT_EQ(mluLaunchTask(q0, "who", [&](TaskContext& ctx) { seen0 = ctx.device(); }), mluSuccess);
  ASSERT_EQ(mluLaunchTask(q1, "who", [&](TaskContext& ctx) { seen1 = ctx.device(); }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q0), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q1), mluSuccess);
  EXPECT_EQ(seen0, 0);
  EXPECT_EQ(seen1, 1);
  int device = -1;
  EXPECT_EQ(mluQueueGetDevice(q1, &device), mluSuccess);
  EXPECT_EQ(device, 1);
}

TEST(Queue, TwoQueuesRunConcurrently) {
  // q1's task can only finish if q2's task runs while it is still running: a
  // runtime that serialised the queues would make it time out.
  bool q1_saw_flag = false;
  ScopedQueue q1(0), q2(0);
  Gate flag;
  ASSERT_EQ(mluLaunchTask(q1, "waiter", [&, f = flag.future()](TaskContext& ctx) {
              q1_saw_flag = f.wait_for(kTaskTimeout) == std::future_status::ready;
              if (!q1_saw_flag) ctx.fail("q2 never ran while q1 was busy");
            }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(q2, "setter", [&flag] { flag.open(); }), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(q2), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(q1), mluSuccess) << mluGetLastErrorDetail();
  EXPECT_TRUE(q1_saw_flag);
}

TEST(Queue, QueuesOfDifferentDevicesRunConcurrently) {
  bool saw = false;
  ScopedQueue q0(0), q1(1);
  Gate flag;
  ASSERT_EQ(mluLaunchTask(q0, "waiter", [&, f = flag.future()] {
              saw = f.wait_for(kTaskTimeout) == std::future_status::ready;
            }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(q1, "setter", [&flag] { flag.open(); }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q0), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q1), mluSuccess);
  EXPECT_TRUE(saw);
}

TEST(Queue, LargeClosuresAreStoredOutOfLine) {
  // Bigger than the inline storage: the runtime boxes it on the heap.
  std::array<int, 1024> payload;
  std::iota(payload.begin(), payload.end(), 1);
  static_assert(sizeof(payload) > detail::kTaskInlineBytes);
  auto token = std::make_shared<int>(0);  // counts the closure's copies
  long long sum = 0;
  ScopedQueue queue(0);
  ASSERT_EQ(mluLaunchTask(queue, "big", [payload, token, &sum] {
              sum = std::accumulate(payload.begin(), payload.end(), 0LL);
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(sum, 1024LL * 1025 / 2);
  EXPECT_EQ(token.use_count(), 1) << "the boxed closure must be destroyed after it ran";
}

TEST(Queue, InlineClosuresAreDestroyedAfterRunning) {
  auto token = std::make_shared<int>(0);
  int calls = 0;
  ScopedQueue queue(0);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(mluLaunchTask(queue, "small", [token, &calls] { ++calls; }), mluSuccess);
  }
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(token.use_count(), 1);
}

namespace {
// Movable but not nothrow-movable: must take the boxed path as well.
struct ThrowingMove {
  int value = 42;
  ThrowingMove() = default;
  ThrowingMove(const ThrowingMove&) = default;
  ThrowingMove(ThrowingMove&& other) noexcept(false) : value(other.value) {}
};
}  // namespace

TEST(Queue, ClosuresWithThrowingMoveWork) {
  int seen = 0;
  ScopedQueue queue(0);
  ThrowingMove capture;
  ASSERT_EQ(mluLaunchTask(queue, "throwing move", [capture, &seen] { seen = capture.value; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(seen, 42);
}

TEST(Queue, DestroyDrainsPendingWork) {
  std::atomic<int> ran{0};
  std::atomic<bool> destroy_returned{false};
  ScopedQueue scoped(0);
  mluQueue_t queue = scoped.release();
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(mluLaunchTask(queue, "count", [&ran] { ++ran; }), mluSuccess);

  std::thread destroyer([&] {
    EXPECT_EQ(mluQueueDestroy(queue), mluSuccess);
    destroy_returned = true;
  });
  std::this_thread::sleep_for(30ms);  // give a broken destroy time to return early
  EXPECT_FALSE(destroy_returned) << "mluQueueDestroy returned before the queue's work finished";
  gate.open();
  destroyer.join();
  EXPECT_EQ(ran, 100) << "destroy must run every pending task";

  // The handle is now invalid everywhere.
  EXPECT_EQ(mluLaunchTask(queue, "late", [] {}), mluErrorInvalidResourceHandle);
  EXPECT_NE(std::string(mluGetLastErrorDetail()), "");
  EXPECT_EQ(mluQueueQuery(queue), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluQueueSynchronize(queue), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluQueueDestroy(queue), mluErrorInvalidResourceHandle);
  int value = 0;
  EXPECT_EQ(mluQueueGetPriority(queue, &value), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluQueueGetDevice(queue, &value), mluErrorInvalidResourceHandle);
  uint64_t count = 0;
  EXPECT_EQ(mluQueueGetLaunchCount(queue, &count), mluErrorInvalidResourceHandle);
  ScopedEvent event;
  EXPECT_EQ(mluEventRecord(event, queue), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluQueueWaitEvent(queue, event), mluErrorInvalidResourceHandle);
  std::array<char, 1024> big{};
  EXPECT_EQ(mluLaunchTask(queue, "late big", [big] { (void)big; }), mluErrorInvalidResourceHandle);
  // Device-wide synchronization no longer sees the queue.
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
}

TEST(Queue, DestroyNeverUsedQueue) {
  mluQueue_t queue = nullptr;
  ASSERT_EQ(mluQueueCreate(&queue), mluSuccess);
  EXPECT_EQ(mluQueueDestroy(queue), mluSuccess);
  EXPECT_EQ(mluQueueQuery(queue), mluErrorInvalidResourceHandle);
}

TEST(Queue, DefaultQueueCannotBeDestroyed) {
  EXPECT_EQ(mluQueueDestroy(nullptr), mluErrorInvalidResourceHandle);
  mluQueue_t default_queue = nullptr;
  ASSERT_EQ(mluGetDefaultQueue(1, &default_queue), mluSuccess);
  ASSERT_NE(default_queue, nullptr);
  EXPECT_EQ(mluQueueDestroy(default_queue), mluErrorInvalidResourceHandle);
  // Still usable.
  bool ran = false;
  ASSERT_EQ(mluLaunchTask(default_queue, "still alive", [&ran] { ran = true; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(default_queue), mluSuccess);
  EXPECT_TRUE(ran);
  int device = -1;
  EXPECT_EQ(mluQueueGetDevice(default_queue, &device), mluSuccess);
  EXPECT_EQ(device, 1);
  mluQueue_t again = nullptr;
  EXPECT_EQ(mluGetDefaultQueue(1, &again), mluSuccess);
  EXPECT_EQ(again, default_queue) << "one default queue per device";
  mluQueue_t other = nullptr;
  EXPECT_EQ(mluGetDefaultQueue(0, &other), mluSuccess);
  EXPECT_NE(other, default_queue);
}

TEST(Queue, PriorityRangeAndClamping) {
  int least = 99, greatest = 99;
  ASSERT_EQ(mluDeviceGetQueuePriorityRange(&least, &greatest), mluSuccess);
  EXPECT_LE(greatest, least) << "lower numbers are higher priority";
  struct Case {
    int requested, expected;
  };
  for (Case c : {Case{least, least}, Case{greatest, greatest}, Case{least + 5, least}, Case{greatest - 7, greatest},
                 Case{1000, least}, Case{-1000, greatest}}) {
    SCOPED_TRACE(c.requested);
    mluQueue_t queue = nullptr;
    ASSERT_EQ(mluQueueCreateWithPriority(&queue, c.requested), mluSuccess);
    int priority = 1234;
    EXPECT_EQ(mluQueueGetPriority(queue, &priority), mluSuccess);
    EXPECT_EQ(priority, c.expected);
    EXPECT_EQ(mluQueueDestroy(queue), mluSuccess);
  }
  mluQueue_t plain = nullptr;
  ASSERT_EQ(mluQueueCreate(&plain), mluSuccess);
  int priority = 1234;
  EXPECT_EQ(mluQueueGetPriority(plain, &priority), mluSuccess);
  EXPECT_EQ(priority, least) << "the default priority is the least one";
  EXPECT_EQ(mluQueueDestroy(plain), mluSuccess);
  EXPECT_EQ(mluQueueCreate(nullptr), mluErrorInvalidValue);
}

TEST(Queue, FullRingBlocksTheLauncher) {
  constexpr int kCapacity = 1024;  // mluQueue_st::kCapacity
  constexpr int kExtra = 200;
  std::atomic<int> launched{0};
  std::vector<int> order;
  ScopedQueue queue(0);
  Gate gate;
  std::thread launcher([&] {
    if (mluLaunchTask(queue, "blocker", gate.blocker()) != mluSuccess) return;
    ++launched;
    for (int i = 0; i < kCapacity + kExtra; ++i) {
      if (mluLaunchTask(queue, "append", [&order, i] { order.push_back(i); }) != mluSuccess) return;
      ++launched;
    }
  });
  // The blocker occupies a slot while it runs, so exactly kCapacity launches fit.
  EXPECT_TRUE(eventually([&] { return launched.load() >= kCapacity; }));
  std::this_thread::sleep_for(50ms);  // let a broken runtime run past the limit
  EXPECT_EQ(launched.load(), kCapacity) << "a full ring must block the launching thread";
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
  gate.open();
  launcher.join();
  EXPECT_EQ(launched.load(), kCapacity + kExtra + 1);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  ASSERT_EQ(order.size(), size_t(kCapacity + kExtra));
  for (int i = 0; i < kCapacity + kExtra; ++i) ASSERT_EQ(order[i], i);
}

TEST(Queue, ErrorsAreReportedOnceAndWorkContinues) {
  int before = 0, between = 0, after = 0;
  ScopedQueue queue(0);
  ASSERT_EQ(mluLaunchTask(queue, "before", [&before] { ++before; }), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "bounds_check_kernel",
                          [](TaskContext& ctx) { ctx.fail("index 7 out of range"); }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "between", [&between] { ++between; }), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "throwing_kernel", [] { throw std::runtime_error("second failure"); }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "after", [&after] { ++after; }), mluSuccess);

  ASSERT_EQ(mluQueueSynchronize(queue), mluErrorLaunchFailure);
  std::string detail = mluGetLastErrorDetail();
  EXPECT_NE(detail.find("bounds_check_kernel"), std::string::npos) << detail;
  EXPECT_NE(detail.find("index 7 out of range"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("second failure"), std::string::npos) << "the first error wins: " << detail;
  // Reading the error cleared it.
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(before, 1);
  EXPECT_EQ(between, 1) << "tasks after a failure still run";
  EXPECT_EQ(after, 1);

  // The device is usable again.
  ASSERT_EQ(mluLaunchTask(queue, "later", [&after] { ++after; }), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(after, 2);
}

TEST(Queue, ThrownExceptionsBecomeErrors) {
  ScopedQueue queue(1);
  ASSERT_EQ(mluLaunchTask(queue, "throwing_kernel", [] { throw std::runtime_error("bad shape [3, 4]"); }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluErrorLaunchFailure);
  std::string detail = mluGetLastErrorDetail();
  EXPECT_NE(detail.find("throwing_kernel"), std::string::npos) << detail;
  EXPECT_NE(detail.find("bad shape [3, 4]"), std::string::npos) << detail;
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);

  ASSERT_EQ(mluLaunchTask(queue, "weird_throw", [] { throw 42; }), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(queue), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("weird_throw"), std::string::npos);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
}

TEST(Queue, DeviceSynchronizeReportsErrorsFromAnyQueue) {
  ScopedQueue clean(0), failing(0);
  ASSERT_EQ(mluLaunchTask(clean, "fine", [] {}), mluSuccess);
  ASSERT_EQ(mluLaunchTask(failing, "failing_kernel", [](TaskContext& ctx) { ctx.fail("boom"); }), mluSuccess);
  ASSERT_EQ(mluDeviceSynchronize(), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("failing_kernel: boom"), std::string::npos)
      << mluGetLastErrorDetail();
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
}

TEST(Queue, ErrorsBelongToTheirDevice) {
  ScopedQueue on1(1);
  ASSERT_EQ(mluLaunchTask(on1, "failing_kernel", [](TaskContext& ctx) { ctx.fail("on device 1"); }), mluSuccess);
  // Wait without consuming the error (every synchronizing call would take it).
  EXPECT_TRUE(eventually([&] { return mluQueueQuery(on1) == mluSuccess; }));
  EXPECT_EQ(mluDeviceSynchronizeOn(0), mluSuccess) << "device 0 has no error";
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("on device 1"), std::string::npos);
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
}

TEST(Queue, ErrorsBelongToTheirQueue) {
  ScopedQueue failing(0), other(0);
  ASSERT_EQ(mluLaunchTask(failing, "failing_kernel", [](TaskContext& ctx) { ctx.fail("index 9 out of range"); }),
            mluSuccess);
  EXPECT_TRUE(eventually([&] { return mluQueueQuery(failing) == mluSuccess; }));
  // Neither another queue's synchronize nor its blocking copies report it.
  ASSERT_EQ(mluLaunchTask(other, "fine", [] {}), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(other), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(nullptr), mluSuccess) << "the default queue did not fail";
  // Its own queue's synchronize does, once; then nothing is left for the device.
  EXPECT_EQ(mluQueueSynchronize(failing), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("device 0: failing_kernel: index 9 out of range"),
            std::string::npos)
      << mluGetLastErrorDetail();
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
}

TEST(Queue, DeviceSynchronizeReportsEachQueuesErrorOnce) {
  ScopedQueue a(0), b(0);
  ASSERT_EQ(mluLaunchTask(a, "kernel_a", [](TaskContext& ctx) { ctx.fail("a"); }), mluSuccess);
  ASSERT_EQ(mluLaunchTask(b, "kernel_b", [](TaskContext& ctx) { ctx.fail("b"); }), mluSuccess);
  ASSERT_EQ(mluDeviceSynchronize(), mluErrorLaunchFailure);
  const std::string first = mluGetLastErrorDetail();
  ASSERT_EQ(mluDeviceSynchronize(), mluErrorLaunchFailure);
  const std::string second = mluGetLastErrorDetail();
  EXPECT_NE(first, second);
  EXPECT_NE((first + second).find("kernel_a: a"), std::string::npos) << first << " / " << second;
  EXPECT_NE((first + second).find("kernel_b: b"), std::string::npos) << first << " / " << second;
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(a), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(b), mluSuccess);
}

TEST(Queue, ADestroyedQueueLeavesItsErrorToTheDevice) {
  mluQueue_t queue = nullptr;
  ASSERT_EQ(mluQueueCreate(&queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "orphan_kernel", [](TaskContext& ctx) { ctx.fail("lost queue"); }), mluSuccess);
  ASSERT_EQ(mluQueueDestroy(queue), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(nullptr), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronize(), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("orphan_kernel: lost queue"), std::string::npos);
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
}

TEST(Queue, CheckHandleVetsHandlesWithoutReadingThem) {
  ScopedQueue queue(0);
  EXPECT_EQ(mluQueueCheckHandle(queue), mluSuccess);
  EXPECT_EQ(mluQueueCheckHandle(nullptr), mluSuccess) << "null is the default queue";
  mluQueue_t defaults = nullptr;
  ASSERT_EQ(mluGetDefaultQueue(1, &defaults), mluSuccess);
  EXPECT_EQ(mluQueueCheckHandle(defaults), mluSuccess);
  // Not a queue (reading it would crash): rejected by address alone.
  EXPECT_EQ(mluQueueCheckHandle(reinterpret_cast<mluQueue_t>(uintptr_t{12345})), mluErrorInvalidResourceHandle);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("not a queue"), std::string::npos);
  // A destroyed queue is still a handle of the runtime, which the other calls reject.
  mluQueue_t destroyed = nullptr;
  ASSERT_EQ(mluQueueCreate(&destroyed), mluSuccess);
  ASSERT_EQ(mluQueueDestroy(destroyed), mluSuccess);
  EXPECT_EQ(mluQueueCheckHandle(destroyed), mluSuccess);
  EXPECT_EQ(mluQueueQuery(destroyed), mluErrorInvalidResourceHandle);
}

TEST(Queue, DeviceSynchronizeWaitsForEveryQueue) {
  std::atomic<int> started{0}, done{0};
  ScopedQueue a(0), b(0);
  for (mluQueue_t q : {a.get(), b.get(), static_cast<mluQueue_t>(nullptr)}) {
    ASSERT_EQ(mluLaunchTask(q, "slow", [&started, &done] {
                ++started;
                std::this_thread::sleep_for(20ms);
                ++done;
              }),
              mluSuccess);
  }
  ASSERT_TRUE(eventually([&] { return started.load() == 3; }));  // all running
  ASSERT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(done, 3);
}

TEST(Queue, TasksMayLaunchOntoOtherQueues) {
  bool ran = false;
  ScopedQueue a(0), b(1);
  mluQueue_t target = b;
  ASSERT_EQ(mluLaunchTask(a, "launcher", [target, &ran](TaskContext& ctx) {
              if (mluLaunchTask(target, "child", [&ran] { ran = true; }) != mluSuccess) ctx.fail("launch failed");
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(a), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(b), mluSuccess);
  EXPECT_TRUE(ran);
}

TEST(Queue, TaskCannotSynchronizeOrDestroyItsOwnQueue) {
  mluError_t sync_status = mluSuccess, destroy_status = mluSuccess;
  ScopedQueue queue(0);
  mluQueue_t self = queue;
  ASSERT_EQ(mluLaunchTask(queue, "self", [&, self] {
              sync_status = mluQueueSynchronize(self);
              destroy_status = mluQueueDestroy(self);
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(sync_status, mluErrorInvalidValue);
  EXPECT_EQ(destroy_status, mluErrorInvalidValue);
  EXPECT_EQ(mluQueueQuery(queue), mluSuccess) << "the queue survived";
}

TEST(Queue, LaunchesRacingDestroyEitherRunOrFail) {
  // Destroying a queue while another thread still launches onto it is a race
  // the runtime must survive: every launch either succeeds (and its task runs
  // before mluQueueDestroy returns) or fails with mluErrorInvalidResourceHandle.
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE(round);
    std::atomic<int> ran{0}, succeeded{0};
    mluError_t last_status = mluSuccess;
    mluQueue_t queue = nullptr;
    ASSERT_EQ(mluQueueCreate(&queue), mluSuccess);
    std::thread launcher([&] {
      for (;;) {
        mluError_t status = mluLaunchTask(queue, "count", [&ran] { ran.fetch_add(1); });
        if (status != mluSuccess) {
          last_status = status;
          return;
        }
        succeeded.fetch_add(1);
      }
    });
    ASSERT_TRUE(eventually([&] { return succeeded.load() >= 50 + round * 20; }));
    ASSERT_EQ(mluQueueDestroy(queue), mluSuccess);
    int ran_at_destroy = ran.load();
    launcher.join();
    EXPECT_EQ(last_status, mluErrorInvalidResourceHandle);
    EXPECT_EQ(ran_at_destroy, succeeded.load()) << "a successful launch was lost or ran after destroy returned";
    EXPECT_EQ(ran.load(), succeeded.load());
  }
}

TEST(Queue, DestroyReleasesLaunchersWaitingForAFullRing) {
  constexpr int kCapacity = 1024;
  std::atomic<int> ran{0}, launched{0};
  std::atomic<bool> launcher_done{false};
  mluError_t blocked_status = mluSuccess;
  mluQueue_t queue = nullptr;
  ASSERT_EQ(mluQueueCreate(&queue), mluSuccess);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  std::thread launcher([&] {
    for (;;) {
      mluError_t status = mluLaunchTask(queue, "count", [&ran] { ran.fetch_add(1); });
      if (status != mluSuccess) {
        blocked_status = status;
        break;
      }
      launched.fetch_add(1);
    }
    launcher_done = true;
  });
  ASSERT_TRUE(eventually([&] { return launched.load() == kCapacity - 1; }));  // ring full, launcher blocked
  std::thread destroyer([&] { EXPECT_EQ(mluQueueDestroy(queue), mluSuccess); });
  // The blocked launch fails once the destroy begins, without waiting for the drain.
  EXPECT_TRUE(eventually([&] { return launcher_done.load(); }));
  gate.open();
  destroyer.join();
  launcher.join();
  EXPECT_EQ(blocked_status, mluErrorInvalidResourceHandle);
  EXPECT_EQ(ran.load(), kCapacity - 1);
  EXPECT_EQ(launched.load(), kCapacity - 1);
}

// Host waiters announce the task they wait for (Note [Lock-free launches]):
// each wakes when its own task finishes, whichever announced first, and a
// waiter for a later task keeps sleeping through the wake-up of an earlier one.
TEST(Queue, EachHostWaiterWakesWhenItsOwnTaskFinishes) {
  for (bool later_waits_first : {false, true}) {
    ScopedQueue queue(0);
    Gate first, second;
    ScopedEvent after_first;
    ASSERT_EQ(mluLaunchTask(queue, "first", first.blocker()), mluSuccess);
    ASSERT_EQ(mluEventRecord(after_first, queue), mluSuccess);
    ASSERT_EQ(mluLaunchTask(queue, "second", second.blocker()), mluSuccess);
    std::atomic<bool> early_done{false}, late_done{false};
    std::function<void()> wait_early = [&] {
      EXPECT_EQ(mluEventSynchronize(after_first), mluSuccess);
      early_done = true;
    };
    std::function<void()> wait_late = [&] {
      EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
      late_done = true;
    };
    std::thread a(later_waits_first ? wait_late : wait_early);
    std::this_thread::sleep_for(20ms);  // past the spin: the first waiter sleeps
    std::thread b(later_waits_first ? wait_early : wait_late);
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(early_done || late_done);
    first.open();
    EXPECT_TRUE(eventually([&] { return early_done.load(); })) << "the event's waiter was not woken";
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(late_done) << "the queue's waiter returned before its last task finished";
    second.open();
    EXPECT_TRUE(eventually([&] { return late_done.load(); })) << "the queue's waiter was not woken";
    a.join();
    b.join();
  }
}

// Many host threads wait for random points of a stream of short tasks; every
// one returns, after its task (run under TSAN by `make tsan`).
TEST(Queue, ManyWaitersOnAStreamOfTasks) {
  constexpr int kTasks = 2000, kWaiters = 6;
  ScopedQueue queue(0);
  std::atomic<int> ran{0};
  std::vector<ScopedEvent> events(kWaiters);
  std::vector<std::thread> waiters;
  std::atomic<int> wrong{0};
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_EQ(mluLaunchTask(queue, "count", [&ran] { ran.fetch_add(1); }), mluSuccess);
    if (i % (kTasks / kWaiters) == 0 && waiters.size() < kWaiters) {
      const int w = static_cast<int>(waiters.size());
      ASSERT_EQ(mluEventRecord(events[w], queue), mluSuccess);
      waiters.emplace_back([&, w, i] {
        EXPECT_EQ(mluEventSynchronize(events[w]), mluSuccess);
        if (ran.load() < i + 1) wrong.fetch_add(1);
      });
    }
  }
  for (auto& t : waiters) t.join();
  EXPECT_EQ(wrong.load(), 0) << "a waiter returned before the task it waited for ran";
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(ran.load(), kTasks);
}

// Note [Small tasks run inline]: on an idle queue the launcher runs a small
// task itself, before the launch returns; with work pending it goes to the
// device thread behind that work. Either way it is a launched task: counted,
// ordered, its failure reported by the next synchronize, not by the launch.
TEST(Queue, SmallTasksRunInlineOnlyOnAnIdleQueue) {
  ScopedQueue queue(0);
  const std::thread::id host = std::this_thread::get_id();
  std::thread::id ran_on;
  ASSERT_EQ(mluLaunchSmallTask(queue, "small", [&] { ran_on = std::this_thread::get_id(); }), mluSuccess);
  EXPECT_EQ(ran_on, host) << "an idle queue's small task runs on the launching thread";
  EXPECT_EQ(mluQueueQuery(queue), mluSuccess);

  std::vector<int> order;
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "gated", [&, f = gate.future()](TaskContext& ctx) {
              if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("gate timed out");
              order.push_back(0);
            }),
            mluSuccess);
  std::atomic<bool> small_ran{false};
  std::thread::id second;
  ASSERT_EQ(mluLaunchSmallTask(queue, "small", [&] {
              order.push_back(1);
              second = std::this_thread::get_id();
              small_ran = true;
            }),
            mluSuccess);
  EXPECT_FALSE(small_ran) << "behind pending work the small task waits its turn";
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  EXPECT_NE(second, host);
  uint64_t count = 0;
  EXPECT_EQ(mluQueueGetLaunchCount(queue, &count), mluSuccess);
  EXPECT_EQ(count, 3u);

  // Inline again (the queue is idle), then ordinary tasks on the device thread
  // see its effects and run after it.
  int value = 0;
  ASSERT_EQ(mluLaunchSmallTask(queue, "small", [&] { value = 1; }), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "after", [&] { value *= 10; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(value, 10);
}

TEST(Queue, AnInlineTasksFailureIsReportedBySynchronize) {
  ScopedQueue queue(0);
  ASSERT_EQ(mluLaunchSmallTask(queue, "small_check", [](TaskContext& ctx) { ctx.fail("index 3 out of range"); }),
            mluSuccess)
      << "the launch itself succeeds, as for a task on the device thread";
  int after = 0;
  ASSERT_EQ(mluLaunchSmallTask(queue, "after", [&after] { ++after; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluErrorLaunchFailure);
  const std::string detail = mluGetLastErrorDetail();
  EXPECT_NE(detail.find("small_check"), std::string::npos) << detail;
  EXPECT_EQ(after, 1);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
}

// Small and ordinary tasks from several host threads onto one queue keep each
// thread's order; the total is every task once.
TEST(Queue, SmallTasksFromManyThreadsKeepOrder) {
  ScopedQueue queue(0);
  constexpr int kThreads = 4, kTasks = 2000;
  std::vector<std::vector<int>> seen(kThreads);  // touched by tasks, which never run concurrently
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kTasks; ++i) {
        auto task = [&seen, t, i] { seen[t].push_back(i); };
        const mluError_t status =
            i % 3 == 0 ? mluLaunchTask(queue, "ordinary", task) : mluLaunchSmallTask(queue, "small", task);
        ASSERT_EQ(status, mluSuccess);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  std::vector<int> expected(kTasks);
  std::iota(expected.begin(), expected.end(), 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[t], expected) << "thread " << t;
}

// Note [Device threads at exit]: the drain waits for what every queue holds;
// a queue that makes no progress is abandoned (its later tasks finish without
// running) instead of holding the exit.
TEST(Queue, DrainAtExitRunsQueuedWorkAndAbandonsAStuckQueue) {
  ScopedQueue busy(0), stuck(0);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(mluLaunchTask(busy, "work",
                            [&] {
                              std::this_thread::sleep_for(std::chrono::microseconds(200));
                              ++ran;
                            }),
              mluSuccess);
  }
  Gate gate;
  std::atomic<bool> after_gate{false};
  ASSERT_EQ(mluLaunchTask(stuck, "gated",
                          [f = gate.future()](TaskContext& ctx) {
                            if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("gate timed out");
                          }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(stuck, "after the gate", [&] { after_gate = true; }), mluSuccess);
  mluDrainAtExit(/*stall_ms=*/300);
  EXPECT_EQ(ran.load(), 50) << "the drain returned before the busy queue ran its work";
  EXPECT_EQ(mluQueueQuery(stuck), mluErrorNotReady);
  gate.open();
  EXPECT_EQ(mluQueueSynchronize(stuck), mluSuccess);
  EXPECT_FALSE(after_gate) << "a task of the abandoned queue ran";
  EXPECT_EQ(mluQueueSynchronize(busy), mluSuccess);
}
