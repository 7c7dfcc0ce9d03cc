// Stream capture and graph replay (Note [Stream capture] in graph.h).
#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using namespace mlu;
using namespace mlu_test;

// Ends the capture on q, expecting failure `code`, and checks the queue is
// usable afterwards.
void end_expecting(mluQueue_t q, mluError_t code) {
  mluGraph_t graph = nullptr;
  EXPECT_EQ(mluQueueEndCapture(q, &graph), code) << mluGetLastErrorDetail();
  EXPECT_EQ(graph, nullptr);
  mluQueueCaptureStatus status;
  ASSERT_EQ(mluQueueGetCaptureInfo(q, &status, nullptr), mluSuccess);
  EXPECT_EQ(status, mluQueueCaptureStatusNone);
  std::atomic<int> ran{0};
  ASSERT_EQ(mluLaunchTask(q, "after", [&] { ran += 1; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q), mluSuccess);
  EXPECT_EQ(ran.load(), 1);
}

TEST(Graph, CapturedTasksRunOnlyAtReplayInOrderEveryTime) {
  std::vector<int> log;
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  mluQueueCaptureStatus status;
  uint64_t id = 0;
  ASSERT_EQ(mluQueueGetCaptureInfo(queue, &status, &id), mluSuccess);
  EXPECT_EQ(status, mluQueueCaptureStatusActive);
  EXPECT_GT(id, 0u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(mluLaunchTask(queue, "append", [&log, i] { log.push_back(i); }), mluSuccess);
  uint64_t launched = 1;
  ASSERT_EQ(mluQueueGetLaunchCount(queue, &launched), mluSuccess);
  EXPECT_EQ(launched, 0u);  // nothing reached the device
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_TRUE(log.empty());
  size_t count = 0;
  ASSERT_EQ(mluGraphGetTaskCount(graph, &count), mluSuccess);
  EXPECT_EQ(count, 3u);
  ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "between", [&log] { log.push_back(9); }), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 9, 0, 1, 2}));
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
  EXPECT_EQ(mluGraphDestroy(graph), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluGraphLaunch(graph, queue), mluErrorInvalidResourceHandle);
}

TEST(Graph, ReplayIsOrderedWithOtherWorkAndOutlivesTheHandle) {
  std::vector<int> log;
  ScopedQueue queue;
  Gate gate;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "append", [&log] { log.push_back(1); }), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);  // the queued replay keeps the tasks
  EXPECT_TRUE(log.empty());
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(log, (std::vector<int>{1}));
}

TEST(Graph, DefaultQueueAndNestedCaptureAreRefused) {
  EXPECT_EQ(mluQueueBeginCapture(nullptr, mluQueueCaptureModeGlobal), mluErrorStreamCaptureUnsupported);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("default queue"), std::string::npos);
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  EXPECT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluErrorStreamCaptureUnsupported);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  mluGraph_t again = nullptr;
  EXPECT_EQ(mluQueueEndCapture(queue, &again), mluErrorInvalidValue);
  EXPECT_EQ(again, nullptr);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, SynchronizingOrQueryingTheCapturingQueueInvalidatesTheCapture) {
  for (int which = 0; which < 4; ++which) {
    ScopedQueue queue;
    ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
    ASSERT_EQ(mluLaunchTask(queue, "work", [] {}), mluSuccess);
    mluError_t refused = which == 0 ? mluQueueSynchronize(queue)
                         : which == 1 ? mluQueueQuery(queue)
                         : which == 2 ? mluDeviceSynchronize()
                                      : mluQueueDestroy(queue);
    EXPECT_EQ(refused, mluErrorStreamCaptureUnsupported) << which;
    EXPECT_NE(std::string(mluGetLastErrorDetail()).find("capturing"), std::string::npos) << mluGetLastErrorDetail();
    mluQueueCaptureStatus status;
    ASSERT_EQ(mluQueueGetCaptureInfo(queue, &status, nullptr), mluSuccess);
    EXPECT_EQ(status, mluQueueCaptureStatusInvalidated);
    EXPECT_EQ(mluLaunchTask(queue, "later", [] {}), mluErrorStreamCaptureInvalidated);
    end_expecting(queue, mluErrorStreamCaptureInvalidated);
    EXPECT_NE(std::string(mluGetLastErrorDetail()).find("invalidated"), std::string::npos);
  }
}

TEST(Graph, BlockingCopiesAndFreesOnACapturingQueueAreRefused) {
  DeviceBuffer device(1024);
  std::vector<char> pageable(1024);
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
  EXPECT_EQ(mluMemcpyAsync(pageable.data(), device.get(), 1024, mluMemcpyDeviceToHost, queue),
            mluErrorStreamCaptureUnsupported);
  end_expecting(queue, mluErrorStreamCaptureInvalidated);

  void* ptr = nullptr;
  ASSERT_EQ(mluMalloc(&ptr, 256), mluSuccess);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
  EXPECT_EQ(mluFreeAsync(ptr, queue), mluErrorStreamCaptureUnsupported);
  end_expecting(queue, mluErrorStreamCaptureInvalidated);
  EXPECT_EQ(mluFree(ptr), mluSuccess);  // the refused free left the allocation alone
}

TEST(Graph, PinnedCopiesAreCapturedAndReplayed) {
  DeviceBuffer device(sizeof(int));
  void* pinned = nullptr;
  ASSERT_EQ(mluHostMalloc(&pinned, sizeof(int)), mluSuccess);
  int* host = static_cast<int*>(pinned);
  int back = 0;
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluMemcpyAsync(device.get(), host, sizeof(int), mluMemcpyHostToDevice, queue), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  for (int value : {7, 11}) {
    *host = value;  // replay reads the pinned buffer as it is then
    ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);
    ASSERT_EQ(mluMemcpyAsync(&back, device.get(), sizeof(int), mluMemcpyDeviceToHost, queue), mluSuccess);
    EXPECT_EQ(back, value);
  }
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
  ASSERT_EQ(mluFreeHost(pinned), mluSuccess);
}

TEST(Graph, UnsafeCallsDependOnTheMode) {
  DeviceBuffer device(64);
  char host[64] = {};
  for (mluQueueCaptureMode mode : {mluQueueCaptureModeGlobal, mluQueueCaptureModeThreadLocal}) {
    ScopedQueue queue;
    ASSERT_EQ(mluQueueBeginCapture(queue, mode), mluSuccess);
    EXPECT_EQ(mluMemcpy(host, device.get(), 64, mluMemcpyDeviceToHost), mluErrorStreamCaptureUnsupported);
    EXPECT_NE(std::string(mluGetLastErrorDetail()).find("relaxed"), std::string::npos);
    end_expecting(queue, mluErrorStreamCaptureInvalidated);
  }
  {  // relaxed: permitted
    ScopedQueue queue;
    ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
    EXPECT_EQ(mluMemcpy(host, device.get(), 64, mluMemcpyDeviceToHost), mluSuccess);
    void* pinned = nullptr;
    EXPECT_EQ(mluHostMalloc(&pinned, 64), mluSuccess);
    EXPECT_EQ(mluFreeHost(pinned), mluSuccess);
    mluGraph_t graph = nullptr;
    ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
    ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
  }
  {  // thread-local: another thread may make unsafe calls; global: it may not
    for (mluQueueCaptureMode mode : {mluQueueCaptureModeThreadLocal, mluQueueCaptureModeGlobal}) {
      ScopedQueue queue;
      ASSERT_EQ(mluQueueBeginCapture(queue, mode), mluSuccess);
      mluError_t other = mluSuccess;
      std::thread([&] { other = mluMemcpy(host, device.get(), 64, mluMemcpyDeviceToHost); }).join();
      if (mode == mluQueueCaptureModeThreadLocal) {
        EXPECT_EQ(other, mluSuccess);
        mluGraph_t graph = nullptr;
        ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
        ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
      } else {
        EXPECT_EQ(other, mluErrorStreamCaptureUnsupported);
        end_expecting(queue, mluErrorStreamCaptureInvalidated);
      }
    }
  }
}

TEST(Graph, GlobalCaptureMustEndOnItsThread) {
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  mluError_t other = mluSuccess;
  mluGraph_t graph = nullptr;
  std::thread([&] { other = mluQueueEndCapture(queue, &graph); }).join();
  EXPECT_EQ(other, mluErrorStreamCaptureWrongThread);
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, ForkAndJoinThroughEvents) {
  std::vector<std::string> log;
  std::mutex mu;
  auto note = [&](const char* what) {
    return [&log, &mu, what] {
      std::lock_guard<std::mutex> lock(mu);
      log.push_back(what);
    };
  };
  ScopedQueue origin, side;
  ScopedEvent fork(mluEventDisableTiming), join(mluEventDisableTiming);
  ASSERT_EQ(mluQueueBeginCapture(origin, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(origin, "a", note("a")), mluSuccess);
  ASSERT_EQ(mluEventRecord(fork, origin), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(side, fork), mluSuccess);  // side joins the capture
  mluQueueCaptureStatus status;
  ASSERT_EQ(mluQueueGetCaptureInfo(side, &status, nullptr), mluSuccess);
  EXPECT_EQ(status, mluQueueCaptureStatusActive);
  EXPECT_EQ(mluEventQuery(fork), mluErrorStreamCaptureUnsupported);  // not a host-visible point
  end_expecting(origin, mluErrorStreamCaptureInvalidated);
  ASSERT_EQ(mluQueueGetCaptureInfo(side, &status, nullptr), mluSuccess);
  EXPECT_EQ(status, mluQueueCaptureStatusNone);  // the end released the member too

  ASSERT_EQ(mluQueueBeginCapture(origin, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(origin, "a", note("a")), mluSuccess);
  ASSERT_EQ(mluEventRecord(fork, origin), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(side, fork), mluSuccess);
  ASSERT_EQ(mluLaunchTask(side, "b", note("b")), mluSuccess);
  ASSERT_EQ(mluLaunchTask(origin, "c", note("c")), mluSuccess);
  ASSERT_EQ(mluEventRecord(join, side), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(origin, join), mluSuccess);
  ASSERT_EQ(mluLaunchTask(origin, "d", note("d")), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(origin, &graph), mluSuccess) << mluGetLastErrorDetail();
  EXPECT_EQ(mluEventQuery(fork), mluSuccess);  // a record of an ended capture counts as never made
  uint64_t side_launched = 1;
  ASSERT_EQ(mluQueueGetLaunchCount(side, &side_launched), mluSuccess);
  EXPECT_EQ(side_launched, 0u);
  ASSERT_EQ(mluGraphLaunch(graph, origin), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(origin), mluSuccess);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c", "d"}));
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, UnjoinedWorkFailsTheEnd) {
  ScopedQueue origin, side;
  ScopedEvent fork(mluEventDisableTiming), join(mluEventDisableTiming);
  ASSERT_EQ(mluQueueBeginCapture(origin, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluEventRecord(fork, origin), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(side, fork), mluSuccess);
  ASSERT_EQ(mluLaunchTask(side, "b", [] {}), mluSuccess);
  ASSERT_EQ(mluEventRecord(join, side), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(origin, join), mluSuccess);
  ASSERT_EQ(mluLaunchTask(side, "late", [] {}), mluSuccess);  // after the join point
  EXPECT_EQ(mluQueueEndCapture(side, nullptr), mluErrorInvalidValue);
  mluGraph_t graph = nullptr;
  EXPECT_EQ(mluQueueEndCapture(side, &graph), mluErrorStreamCaptureUnsupported);  // not the origin
  end_expecting(origin, mluErrorStreamCaptureUnjoined);
  end_expecting(side, mluErrorInvalidValue);
}

TEST(Graph, LayersAboveRefuseTheirOwnOperations) {
  ScopedQueue queue;
  EXPECT_EQ(mluQueueRefuseInCapture(queue, "aten::nonzero on the CPU fallback"), mluSuccess);  // not capturing
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
  EXPECT_EQ(mluQueueRefuseInCapture(queue, "aten::nonzero on the CPU fallback"), mluErrorStreamCaptureUnsupported);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("aten::nonzero"), std::string::npos);
  end_expecting(queue, mluErrorStreamCaptureInvalidated);
}

TEST(Graph, WaitingForUnfinishedOutsideWorkIsRefused) {
  ScopedQueue producer, queue;
  Gate gate;
  ScopedEvent outside(mluEventDisableTiming);
  ASSERT_EQ(mluLaunchTask(producer, "blocker", gate.blocker()), mluSuccess);
  ASSERT_EQ(mluEventRecord(outside, producer), mluSuccess);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  EXPECT_EQ(mluQueueWaitEvent(queue, outside), mluErrorStreamCaptureUnsupported);
  end_expecting(queue, mluErrorStreamCaptureInvalidated);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(producer), mluSuccess);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  EXPECT_EQ(mluQueueWaitEvent(queue, outside), mluSuccess);  // finished: nothing to wait for
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, WorkOnAnotherDeviceFromTheCapturingThreadIsRefused) {
  ScopedQueue queue(0), other(1);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeRelaxed), mluSuccess);
  EXPECT_EQ(mluLaunchTask(other, "elsewhere", [] {}), mluErrorStreamCaptureUnsupported);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("device 1"), std::string::npos);
  end_expecting(queue, mluErrorStreamCaptureInvalidated);
  std::atomic<int> ran{0};
  ASSERT_EQ(mluLaunchTask(other, "after", [&] { ran += 1; }), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(other), mluSuccess);
  EXPECT_EQ(ran.load(), 1);
}

TEST(Graph, AFailingTaskFailsTheReplayNamingIt) {
  std::atomic<int> after{0};
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "index check", [](TaskContext& c) { c.fail("index 7 is out of bounds"); }),
            mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "after", [&] { after += 1; }), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(queue), mluErrorLaunchFailure);
  const std::string detail = mluGetLastErrorDetail();
  EXPECT_NE(detail.find("graph replay: index check: index 7 is out of bounds"), std::string::npos) << detail;
  EXPECT_EQ(after.load(), 1);
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess);  // reported once
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, GraphsNestAndLaunchOnlyOnTheirDevice) {
  std::vector<int> log;
  ScopedQueue queue, other_device(1);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "inner", [&log] { log.push_back(1); }), mluSuccess);
  mluGraph_t inner = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &inner), mluSuccess);
  EXPECT_EQ(mluGraphLaunch(inner, other_device), mluErrorInvalidValue);
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(inner, queue), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "outer", [&log] { log.push_back(2); }), mluSuccess);
  mluGraph_t outer = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &outer), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(outer, queue), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
  ASSERT_EQ(mluGraphDestroy(inner), mluSuccess);
  ASSERT_EQ(mluGraphDestroy(outer), mluSuccess);
}

TEST(Graph, ReplayArgumentsReachTheTasksInStreamOrder) {
  std::vector<uint64_t> seen;
  ScopedQueue queue;
  Gate gate;
  const void* arguments = nullptr;
  EXPECT_EQ(mluQueueGetCaptureArguments(queue, &arguments), mluErrorInvalidValue);  // not capturing
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluQueueGetCaptureArguments(queue, &arguments), mluSuccess);
  const auto* value = static_cast<const uint64_t*>(arguments);
  ASSERT_EQ(mluLaunchTask(queue, "read", [&seen, value] { seen.push_back(*value); }), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  for (uint64_t v : {5u, 6u}) ASSERT_EQ(mluGraphLaunchWithArguments(graph, queue, &v, sizeof v), mluSuccess);
  ASSERT_EQ(mluGraphLaunch(graph, queue), mluSuccess);  // keeps the last arguments
  uint64_t too_many[9] = {};
  EXPECT_EQ(mluGraphLaunchWithArguments(graph, queue, too_many, sizeof too_many), mluErrorInvalidValue);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(seen, (std::vector<uint64_t>{5, 6, 6}));
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, DebugDotPrintNamesTheTasksInOrder) {
  ScopedQueue queue;
  ASSERT_EQ(mluQueueBeginCapture(queue, mluQueueCaptureModeGlobal), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "first", [] {}), mluSuccess);
  ASSERT_EQ(mluLaunchTask(queue, "second", [] {}), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue, &graph), mluSuccess);
  const std::string path = testing::TempDir() + "mlu_graph_test.dot";
  ASSERT_EQ(mluGraphDebugDotPrint(graph, path.c_str()), mluSuccess);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_NE(text.str().find("0: first"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("t0 -> t1"), std::string::npos) << text.str();
  std::remove(path.c_str());
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

TEST(Graph, ConcurrentLaunchersIntoOneCaptureLoseNothing) {
  std::atomic<int> ran{0};
  ScopedQueue origin, side;
  ScopedEvent fork(mluEventDisableTiming), join(mluEventDisableTiming);
  ASSERT_EQ(mluQueueBeginCapture(origin, mluQueueCaptureModeRelaxed), mluSuccess);
  ASSERT_EQ(mluEventRecord(fork, origin), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(side, fork), mluSuccess);
  std::thread t([&] {
    for (int i = 0; i < 500; ++i) ASSERT_EQ(mluLaunchTask(side, "side", [&] { ran += 1; }), mluSuccess);
  });
  for (int i = 0; i < 500; ++i) ASSERT_EQ(mluLaunchTask(origin, "origin", [&] { ran += 1; }), mluSuccess);
  t.join();
  ASSERT_EQ(mluEventRecord(join, side), mluSuccess);
  ASSERT_EQ(mluQueueWaitEvent(origin, join), mluSuccess);
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(origin, &graph), mluSuccess);
  size_t count = 0;
  ASSERT_EQ(mluGraphGetTaskCount(graph, &count), mluSuccess);
  EXPECT_EQ(count, 1000u);
  ASSERT_EQ(mluGraphLaunch(graph, origin), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(origin), mluSuccess);
  EXPECT_EQ(ran.load(), 1000);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}

}  // namespace
