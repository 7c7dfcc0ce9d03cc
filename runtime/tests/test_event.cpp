// Events: completion, Note [Event versioning], timing, cross-queue and
// cross-device waits, handle validation.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

// A task that fulfils a promise the host can wait on with a timeout.
struct Signal {
  std::shared_ptr<std::promise<void>> promise = std::make_shared<std::promise<void>>();
  std::future<void> future = promise->get_future();
  auto task() const {
    return [p = promise] { p->set_value(); };
  }
  bool arrives(std::chrono::milliseconds timeout = kTaskTimeout) {
    return future.wait_for(timeout) == std::future_status::ready;
  }
};

}  // namespace

TEST(Event, CreateAndDestroy) {
  mluEvent_t event = nullptr;
  EXPECT_EQ(mluEventCreate(nullptr), mluErrorInvalidValue);
  EXPECT_EQ(mluEventCreateWithFlags(&event, 0x80), mluErrorInvalidValue);
  for (unsigned flags : {0u, unsigned(mluEventBlockingSync), unsigned(mluEventDisableTiming),
                         unsigned(mluEventBlockingSync | mluEventDisableTiming)}) {
    ASSERT_EQ(mluEventCreateWithFlags(&event, flags), mluSuccess);
    EXPECT_EQ(mluEventDestroy(event), mluSuccess);
  }
}

TEST(Event, NeverRecordedIsComplete) {
  for (unsigned flags : {0u, unsigned(mluEventDisableTiming)}) {
    ScopedEvent event(flags);
    EXPECT_EQ(mluEventQuery(event), mluSuccess);
    EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
    ScopedQueue queue(0);
    EXPECT_EQ(mluQueueWaitEvent(queue, event), mluSuccess);  // a no-op
    EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
  }
}

TEST(Event, RecordQuerySynchronize) {
  for (unsigned flags : {0u, unsigned(mluEventDisableTiming)}) {
    SCOPED_TRACE(flags);
    ScopedEvent event(flags);
    ScopedQueue queue(0);
    Gate gate;
    ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
    ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);
    EXPECT_EQ(mluEventQuery(event), mluErrorNotReady);
    gate.open();
    EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
    EXPECT_EQ(mluEventQuery(event), mluSuccess);
  }
}

TEST(Event, RecordOnTheDefaultQueue) {
  ScopedEvent event;
  ASSERT_EQ(mluEventRecord(event, nullptr), mluSuccess);
  EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
  EXPECT_EQ(mluEventQuery(event), mluSuccess);
}

TEST(Event, CompleteMeansFinishedNotDequeued) {
  // The task keeps running for a while after it was dequeued (and after the
  // gate opened); the event may only report success once it has returned.
  for (unsigned flags : {unsigned(mluEventDisableTiming), 0u}) {
    SCOPED_TRACE(flags);
    std::atomic<bool> returned{false};
    int payload = 0;  // plain: ThreadSanitizer checks the event's happens-before
    ScopedEvent event(flags);
    ScopedQueue queue(0);
    Gate gate;
    ASSERT_EQ(mluLaunchTask(queue, "slow tail", [&, f = gate.future()](TaskContext& ctx) {
                if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("gate timed out");
                std::this_thread::sleep_for(20ms);  // dequeued, running, not finished
                payload = 42;
                returned.store(true, std::memory_order_relaxed);
              }),
              mluSuccess);
    ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);
    std::this_thread::sleep_for(5ms);  // the device thread has dequeued the task by now
    EXPECT_EQ(mluEventQuery(event), mluErrorNotReady);
    EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
    gate.open();
    bool completed = eventually([&] {
      mluError_t status = mluEventQuery(event);
      EXPECT_TRUE(status == mluSuccess || status == mluErrorNotReady) << status;
      if (status != mluSuccess) return false;
      EXPECT_TRUE(returned.load(std::memory_order_relaxed)) << "event complete before the task returned";
      return true;
    });
    EXPECT_TRUE(completed);
    EXPECT_EQ(payload, 42);
    EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
  }
}

TEST(Event, QueueQueryAndSynchronizeMeanFinished) {
  std::atomic<bool> returned{false};
  ScopedQueue queue(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "slow tail", [&, f = gate.future()] {
              f.wait_for(kTaskTimeout);
              std::this_thread::sleep_for(20ms);
              returned = true;
            }),
            mluSuccess);
  gate.open();
  EXPECT_TRUE(eventually([&] {
    if (mluQueueQuery(queue) != mluSuccess) return false;
    EXPECT_TRUE(returned) << "queue reported idle before the task returned";
    return true;
  }));

  returned = false;
  ASSERT_EQ(mluLaunchTask(queue, "slow", [&] {
              std::this_thread::sleep_for(20ms);
              returned = true;
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_TRUE(returned);
}

TEST(Event, WaitsKeepTheRecordTheySawWhenReRecorded) {
  // Note [Event versioning]: q2's wait was launched before the re-record, so
  // it waits for A only; q3's wait was launched after it and waits for B too.
  for (unsigned flags : {0u, unsigned(mluEventDisableTiming)}) {
    SCOPED_TRACE(flags);
    std::atomic<bool> a_done{false}, b_done{false};
    bool q2_saw_a = false, q2_saw_b = true;
    bool q3_saw_b = false;
    Signal q2_ran, q3_ran;
    ScopedEvent event(flags);
    ScopedQueue q1(0), q2(0), q3(0);
    Gate gate_a, gate_b;

    ASSERT_EQ(mluLaunchTask(q1, "A", [&, f = gate_a.future()](TaskContext& ctx) {
                if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("A timed out");
                a_done = true;
              }),
              mluSuccess);
    ASSERT_EQ(mluEventRecord(event, q1), mluSuccess);
    ASSERT_EQ(mluQueueWaitEvent(q2, event), mluSuccess);
    ASSERT_EQ(mluLaunchTask(q2, "after first record", [&, t = q2_ran.task()] {
                q2_saw_a = a_done;
                q2_saw_b = b_done;
                t();
              }),
              mluSuccess);

    ASSERT_EQ(mluLaunchTask(q1, "B", [&, f = gate_b.future()](TaskContext& ctx) {
                if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("B timed out");
                b_done = true;
              }),
              mluSuccess);
    ASSERT_EQ(mluEventRecord(event, q1), mluSuccess);  // re-record after B
    ASSERT_EQ(mluQueueWaitEvent(q3, event), mluSuccess);
    ASSERT_EQ(mluLaunchTask(q3, "after second record", [&, t = q3_ran.task()] {
                q3_saw_b = b_done;
                t();
              }),
              mluSuccess);

    EXPECT_EQ(mluQueueQuery(q2), mluErrorNotReady) << "q2 must wait for A";
    gate_a.open();
    ASSERT_TRUE(q2_ran.arrives()) << "q2 waited for the later record (B) instead of the one it saw";
    EXPECT_TRUE(q2_saw_a);
    EXPECT_FALSE(q2_saw_b);
    // The event itself now means "after B".
    EXPECT_EQ(mluEventQuery(event), mluErrorNotReady);
    EXPECT_FALSE(q3_ran.arrives(30ms)) << "q3 must wait for B";
    EXPECT_EQ(mluQueueQuery(q3), mluErrorNotReady);

    gate_b.open();
    EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
    EXPECT_EQ(mluEventQuery(event), mluSuccess);
    ASSERT_TRUE(q3_ran.arrives());
    EXPECT_TRUE(q3_saw_b);
    EXPECT_EQ(mluQueueSynchronize(q2), mluSuccess);
    EXPECT_EQ(mluQueueSynchronize(q3), mluSuccess);
  }
}

TEST(Event, QueryUsesTheRecordAtCallTime) {
  ScopedEvent event(mluEventDisableTiming);
  ScopedQueue q1(0), q2(1);
  Gate gate_a, gate_b;
  ASSERT_EQ(mluLaunchTask(q1, "A", gate_a.blocker()), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, q1), mluSuccess);
  EXPECT_EQ(mluEventQuery(event), mluErrorNotReady);
  gate_a.open();
  ASSERT_EQ(mluQueueSynchronize(q1), mluSuccess);
  EXPECT_EQ(mluEventQuery(event), mluSuccess);

  // Re-recording on another queue (another device) replaces the record.
  ASSERT_EQ(mluLaunchTask(q2, "B", gate_b.blocker()), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, q2), mluSuccess);
  EXPECT_EQ(mluEventQuery(event), mluErrorNotReady);
  gate_b.open();
  EXPECT_TRUE(eventually([&] { return mluEventQuery(event) == mluSuccess; }));
  // Re-recording on an idle queue: complete at once.
  ASSERT_EQ(mluEventRecord(event, q1), mluSuccess);
  EXPECT_TRUE(eventually([&] { return mluEventQuery(event) == mluSuccess; }));
}

TEST(Event, SynchronizeWaitsForTheCurrentRecord) {
  std::atomic<bool> b_done{false}, sync_returned{false};
  ScopedEvent event;
  ScopedQueue queue(0);
  Gate gate_b;
  ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);  // an early, complete record
  ASSERT_EQ(mluEventSynchronize(event), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "B", [&, f = gate_b.future()] {
              f.wait_for(kTaskTimeout);
              b_done = true;
            }),
            mluSuccess);
  ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);  // re-record after B
  std::thread waiter([&] {
    EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
    EXPECT_TRUE(b_done) << "synchronize returned before the current record finished";
    sync_returned = true;
  });
  std::this_thread::sleep_for(30ms);  // widen the window for a wrong early return
  EXPECT_FALSE(sync_returned);
  gate_b.open();
  waiter.join();
  EXPECT_TRUE(sync_returned);
}

TEST(Event, DestroyedEventDoesNotBreakPendingWaits) {
  std::atomic<bool> a_done{false};
  bool saw_a = false;
  mluEvent_t event = nullptr;
  ASSERT_EQ(mluEventCreate(&event), mluSuccess);
  ScopedQueue q1(0), q2(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(q1, "A", [&, f = gate.future()] {
              f.wait_for(kTaskTimeout);
              a_done = true;
            }),
            mluSuccess);
  ASSERT_EQ(mluEventRecord(event, q1), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(q2, event), mluSuccess);
  ASSERT_EQ(mluLaunchTask(q2, "after A", [&] { saw_a = a_done; }), mluSuccess);
  ASSERT_EQ(mluEventDestroy(event), mluSuccess);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(q2), mluSuccess);
  EXPECT_TRUE(saw_a);
}

TEST(Event, DestroyedHandleIsAnError) {
  mluEvent_t event = nullptr;
  ASSERT_EQ(mluEventCreate(&event), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, nullptr), mluSuccess);
  ASSERT_EQ(mluEventDestroy(event), mluSuccess);
  // Create more events: a recycled address must not make the stale handle live.
  ScopedEvent other1, other2;
  EXPECT_EQ(mluEventQuery(event), mluErrorInvalidResourceHandle);
  EXPECT_NE(std::string(mluGetLastErrorDetail()), "");
  EXPECT_EQ(mluEventSynchronize(event), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventRecord(event, nullptr), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluQueueWaitEvent(nullptr, event), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventDestroy(event), mluErrorInvalidResourceHandle);
  float ms = 0;
  ASSERT_EQ(mluEventRecord(other1, nullptr), mluSuccess);
  ASSERT_EQ(mluEventSynchronize(other1), mluSuccess);
  EXPECT_EQ(mluEventElapsedTime(&ms, event, other1), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventElapsedTime(&ms, other1, event), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventQuery(nullptr), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventRecord(nullptr, nullptr), mluErrorInvalidResourceHandle);
}

TEST(Event, ElapsedTimeAroundASleepingTask) {
  ScopedEvent start, end;
  ScopedQueue queue(1);
  ASSERT_EQ(mluEventRecord(start, queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "sleep", [] { std::this_thread::sleep_for(20ms); }), mluSuccess);
  ASSERT_EQ(mluEventRecord(end, queue), mluSuccess);
  ASSERT_EQ(mluEventSynchronize(end), mluSuccess);
  float ms = -1;
  ASSERT_EQ(mluEventElapsedTime(&ms, start, end), mluSuccess);
  EXPECT_GE(ms, 15.0f);
  float back = 1;
  ASSERT_EQ(mluEventElapsedTime(&back, end, start), mluSuccess);
  EXPECT_LE(back, -15.0f);
  float same = -1;
  ASSERT_EQ(mluEventElapsedTime(&same, start, start), mluSuccess);
  EXPECT_EQ(same, 0.0f);
}

TEST(Event, ElapsedTimeErrors) {
  ScopedQueue queue(0);
  ScopedEvent timed_a, timed_b, untimed(mluEventDisableTiming), never_recorded;
  float ms = 123;
  ASSERT_EQ(mluEventRecord(timed_a, queue), mluSuccess);
  ASSERT_EQ(mluEventRecord(untimed, queue), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);

  EXPECT_EQ(mluEventElapsedTime(nullptr, timed_a, timed_a), mluErrorInvalidValue);
  EXPECT_EQ(mluEventElapsedTime(&ms, timed_a, untimed), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventElapsedTime(&ms, untimed, timed_a), mluErrorInvalidResourceHandle);
  EXPECT_NE(std::string(mluGetLastErrorDetail()), "");
  EXPECT_EQ(mluEventElapsedTime(&ms, timed_a, never_recorded), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluEventElapsedTime(&ms, never_recorded, timed_a), mluErrorInvalidResourceHandle);

  {
    Gate gate;
    ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
    ASSERT_EQ(mluEventRecord(timed_b, queue), mluSuccess);
    EXPECT_EQ(mluEventElapsedTime(&ms, timed_a, timed_b), mluErrorNotReady);
    EXPECT_EQ(mluEventElapsedTime(&ms, timed_b, timed_a), mluErrorNotReady);
    gate.open();
    ASSERT_EQ(mluEventSynchronize(timed_b), mluSuccess);
  }
  EXPECT_EQ(ms, 123.0f) << "failed calls must not write the result";
  EXPECT_EQ(mluEventElapsedTime(&ms, timed_a, timed_b), mluSuccess);
  EXPECT_GE(ms, 0.0f);
}

TEST(Event, CrossDeviceWait) {
  std::atomic<bool> a_done{false};
  bool saw_a = false;
  ScopedEvent event;
  ScopedQueue q0(0), q1(1);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(q0, "producer on device 0", [&, f = gate.future()](TaskContext& ctx) {
              if (f.wait_for(kTaskTimeout) != std::future_status::ready) ctx.fail("gate timed out");
              a_done = true;
            }),
            mluSuccess);
  ASSERT_EQ(mluEventRecord(event, q0), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(q1, event), mluSuccess);
  ASSERT_EQ(mluLaunchTask(q1, "consumer on device 1", [&] { saw_a = a_done; }), mluSuccess);
  std::this_thread::sleep_for(30ms);  // a consumer that ignored the wait would run now
  EXPECT_EQ(mluQueueQuery(q1), mluErrorNotReady);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(q1), mluSuccess);
  EXPECT_TRUE(saw_a);
  EXPECT_EQ(mluEventQuery(event), mluSuccess);
}

TEST(Event, WaitOnTheSameQueueIsANoOp) {
  ScopedEvent event;
  ScopedQueue queue(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(queue, event), mluSuccess);
  bool ran = false;
  ASSERT_EQ(mluLaunchTask(queue, "after", [&ran] { ran = true; }), mluSuccess);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_TRUE(ran);
}

TEST(Event, SynchronizeReportsOnlyErrorsOfWorkBeforeItsRecord) {
  ScopedEvent before, after;
  ScopedQueue queue(0), other(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "gate", gate.blocker()), mluSuccess);
  ASSERT_EQ(mluEventRecord(before, queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "failing_kernel", [](TaskContext& ctx) { ctx.fail("late"); }), mluSuccess);
  ASSERT_EQ(mluEventRecord(after, queue), mluSuccess);
  gate.open();
  EXPECT_EQ(mluEventSynchronize(after), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("failing_kernel: late"), std::string::npos);
  // Same again, but the earlier record is synchronized first: it must not
  // take the error of the task after it.
  ASSERT_EQ(mluEventRecord(before, queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "failing_kernel", [](TaskContext& ctx) { ctx.fail("later"); }), mluSuccess);
  ASSERT_EQ(mluEventRecord(after, queue), mluSuccess);
  EXPECT_EQ(mluEventSynchronize(before), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(other), mluSuccess);
  EXPECT_EQ(mluEventSynchronize(after), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("failing_kernel: later"), std::string::npos);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);
}

TEST(Event, SynchronizeReportsErrors) {
  ScopedEvent event;
  ScopedQueue queue(1);
  ASSERT_EQ(mluLaunchTask(queue, "failing_kernel", [](TaskContext& ctx) { ctx.fail("nan detected"); }), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);
  EXPECT_EQ(mluEventSynchronize(event), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("failing_kernel: nan detected"), std::string::npos);
  EXPECT_EQ(mluEventSynchronize(event), mluSuccess);
  EXPECT_EQ(mluEventQuery(event), mluSuccess);
}
