// Note [Fault injection] (fault.h): the grammar, and each rule making its
// runtime path fail the way a real failure would, with the runtime usable after.
#include <atomic>
#include <chrono>
#include <string>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

// Clears the rules when a test ends, however it ends.
struct Rules {
  explicit Rules(const char* spec) { EXPECT_EQ(mluFaultInjectSet(spec), mluSuccess) << mluGetLastErrorDetail(); }
  ~Rules() { mluFaultInjectSet(nullptr); }
};

bool detail_has(const std::string& text) { return std::string(mluGetLastErrorDetail()).find(text) != std::string::npos; }

}  // namespace

TEST(FaultInjection, GrammarAndErrors) {
  for (const char* bad : {"kernal:1", "alloc:0", "alloc:x", "kernel:", "kernel:add@0", "delay:0", "capacity:1Q",
                          "alloc"}) {
    EXPECT_EQ(mluFaultInjectSet(bad), mluErrorInvalidValue) << bad;
    EXPECT_TRUE(detail_has("alloc:N[+], host_alloc:N[+], kernel:N[+]")) << mluGetLastErrorDetail();
  }
  {
    Rules rules(" alloc:2 ; kernel:add@3, copy:1+;delay:5;capacity:64M ");
    EXPECT_EQ(mluFaultInjectSpec(), " alloc:2 ; kernel:add@3, copy:1+;delay:5;capacity:64M ");
    EXPECT_EQ(mluFaultInjectSet("nonsense"), mluErrorInvalidValue);
    EXPECT_EQ(mluFaultInjectSpec(), " alloc:2 ; kernel:add@3, copy:1+;delay:5;capacity:64M ");  // kept
  }
  EXPECT_EQ(mluFaultInjectSpec(), "");
}

TEST(FaultInjection, NthAllocationAndLaterOnes) {
  Rules rules("alloc:2");
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(mluMalloc(&a, kMiB), mluSuccess);
  EXPECT_EQ(mluMalloc(&b, kMiB), mluErrorMemoryAllocation);
  EXPECT_TRUE(detail_has("injected fault (TORCH_MLU_FAULT_INJECT 'alloc:2')")) << mluGetLastErrorDetail();
  EXPECT_EQ(b, nullptr);
  ASSERT_EQ(mluMalloc(&b, kMiB), mluSuccess);  // the third is fine
  EXPECT_EQ(mluFaultInjectCount(), 1u);
  ASSERT_EQ(mluFree(a), mluSuccess);
  ASSERT_EQ(mluFree(b), mluSuccess);
  ASSERT_EQ(mluFaultInjectSet("alloc:1+;host_alloc:1"), mluSuccess);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(mluMalloc(&a, 256), mluErrorMemoryAllocation);
  EXPECT_EQ(mluHostMalloc(&a, 256), mluErrorMemoryAllocation);
  EXPECT_TRUE(detail_has("cannot pin"));
  ASSERT_EQ(mluHostMalloc(&a, 256), mluSuccess);
  ASSERT_EQ(mluFreeHost(a), mluSuccess);
  size_t free = 0, total = 0;
  ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
  EXPECT_EQ(free, total) << "a failed allocation must hold nothing";
}

TEST(FaultInjection, KernelsByCountAndName) {
  ScopedQueue queue;
  std::atomic<int> ran{0};
  {
    Rules rules("kernel:2;kernel:scale@2");
    for (const char* name : {"add", "add", "scale", "scale", "add"}) {
      ASSERT_EQ(mluLaunchTask(queue.get(), name, [&] { ran++; }), mluSuccess);
    }
    EXPECT_EQ(mluQueueSynchronize(queue.get()), mluErrorLaunchFailure);  // the first failure: kernel 2
    EXPECT_TRUE(detail_has("add: injected fault (TORCH_MLU_FAULT_INJECT 'kernel:2')")) << mluGetLastErrorDetail();
    EXPECT_EQ(ran.load(), 3);  // kernels 2 and 4 (the second "scale") did not run; the others did
    EXPECT_EQ(mluFaultInjectCount(), 2u);
  }
  // Internal tasks (event records, waits) are never failed, and the queue works on.
  ASSERT_EQ(mluLaunchTask(queue.get(), "add", [&] { ran++; }), mluSuccess);
  EXPECT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  EXPECT_EQ(ran.load(), 4);
}

TEST(FaultInjection, CopiesFailAndTheDataStays) {
  std::vector<int> host(1024, 7), back(1024, 0);
  void* device = nullptr;
  ASSERT_EQ(mluMalloc(&device, host.size() * sizeof(int)), mluSuccess);
  ASSERT_EQ(mluMemcpy(device, host.data(), host.size() * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  {
    Rules rules("copy:1");
    EXPECT_EQ(mluMemcpy(back.data(), device, back.size() * sizeof(int), mluMemcpyDeviceToHost),
              mluErrorLaunchFailure);
    EXPECT_TRUE(detail_has("injected fault")) << mluGetLastErrorDetail();
    EXPECT_EQ(back[0], 0);
  }
  ASSERT_EQ(mluMemcpy(back.data(), device, back.size() * sizeof(int), mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(back, host);
  ASSERT_EQ(mluFree(device), mluSuccess);
}

TEST(FaultInjection, DelayKeepsOrder) {
  ScopedQueue queue;
  std::vector<int> order;
  Rules rules("delay:40");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(mluLaunchTask(queue.get(), "step", [&order, i] { order.push_back(i); }), mluSuccess);
  EXPECT_EQ(mluQueueQuery(queue.get()), mluErrorNotReady);
  ASSERT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 120ms);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(FaultInjection, CapacityDrop) {
  size_t free = 0, total = 0;
  ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
  void* block = nullptr;
  {
    Rules rules("capacity:16M");
    ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
    EXPECT_EQ(total, 16 * kMiB);
    EXPECT_EQ(mluMalloc(&block, 17 * kMiB), mluErrorMemoryAllocation);
    EXPECT_TRUE(detail_has("total capacity of 16.00 MiB")) << mluGetLastErrorDetail();
    ASSERT_EQ(mluMalloc(&block, 8 * kMiB), mluSuccess);
  }
  ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
  EXPECT_EQ(total, 256 * kMiB);
  ASSERT_EQ(mluFree(block), mluSuccess);
}

TEST(FaultInjection, GraphKernelsAreDecidedAtEachReplay) {
  ScopedQueue queue;
  std::atomic<int> ran{0};
  ASSERT_EQ(mluQueueBeginCapture(queue.get(), mluQueueCaptureModeGlobal), mluSuccess);
  {
    Rules rules("kernel:1+");  // captured launches are not launches: nothing fails here
    ASSERT_EQ(mluLaunchTask(queue.get(), "inner", [&] { ran++; }), mluSuccess);
  }
  mluGraph_t graph = nullptr;
  ASSERT_EQ(mluQueueEndCapture(queue.get(), &graph), mluSuccess);
  {
    Rules rules("kernel:inner");
    ASSERT_EQ(mluGraphLaunch(graph, queue.get()), mluSuccess);
    EXPECT_EQ(mluQueueSynchronize(queue.get()), mluErrorLaunchFailure);
    EXPECT_TRUE(detail_has("graph replay: inner: injected fault")) << mluGetLastErrorDetail();
    EXPECT_EQ(ran.load(), 0);
  }
  ASSERT_EQ(mluGraphLaunch(graph, queue.get()), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  EXPECT_EQ(ran.load(), 1);
  ASSERT_EQ(mluGraphDestroy(graph), mluSuccess);
}
