// Device memory, pinned host memory and the allocation registry.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

TEST(Memory, MallocFree) {
  size_t before = free_bytes(0);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 1000), mluSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(std::max_align_t), 0u);
  EXPECT_GE(before - free_bytes(0), 1000u) << "the allocation must count against the capacity";
  EXPECT_EQ(free_bytes(1), 256 * kMiB) << "device 1 is untouched";
  ASSERT_EQ(mluFree(p), mluSuccess);
  EXPECT_EQ(free_bytes(0), before);
}

TEST(Memory, DistinctAllocationsDoNotOverlap) {
  std::vector<void*> blocks(16);
  for (void*& b : blocks) ASSERT_EQ(mluMalloc(&b, 4096), mluSuccess);
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      auto a = reinterpret_cast<uintptr_t>(blocks[i]), b = reinterpret_cast<uintptr_t>(blocks[j]);
      EXPECT_TRUE(a + 4096 <= b || b + 4096 <= a);
    }
  }
  for (void* b : blocks) EXPECT_EQ(mluFree(b), mluSuccess);
}

TEST(Memory, SizeZero) {
  size_t before = free_bytes(0);
  void* p = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(mluMalloc(&p, 0), mluSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(mluFree(nullptr), mluSuccess);
  EXPECT_EQ(mluFreeAsync(nullptr, nullptr), mluSuccess);
  EXPECT_EQ(free_bytes(0), before);
  EXPECT_EQ(mluMalloc(nullptr, 16), mluErrorInvalidValue);
}

TEST(Memory, CapacityExhaustionLeavesDeviceUsable) {
  size_t free0 = 0, total0 = 0;
  ASSERT_EQ(mluMemGetInfo(&free0, &total0), mluSuccess);
  ASSERT_EQ(total0, 256 * kMiB);

  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(mluMalloc(&p, total0 + 1), mluErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("MLU 0"), std::string::npos) << mluGetLastErrorDetail();
  EXPECT_EQ(mluMalloc(&p, SIZE_MAX), mluErrorMemoryAllocation) << "size rounding must not overflow";
  EXPECT_EQ(mluMalloc(&p, SIZE_MAX - 100), mluErrorMemoryAllocation);

  size_t free1 = 0, total1 = 0;
  ASSERT_EQ(mluMemGetInfo(&free1, &total1), mluSuccess);
  EXPECT_EQ(free1, free0) << "a failed allocation must change nothing";
  EXPECT_EQ(total1, total0);

  // Fill the device exactly, then one more byte fails.
  void* all = nullptr;
  ASSERT_EQ(mluMalloc(&all, free0), mluSuccess);
  size_t free2 = 1;
  ASSERT_EQ(mluMemGetInfo(&free2, nullptr), mluSuccess);
  EXPECT_EQ(free2, 0u);
  void* extra = nullptr;
  EXPECT_EQ(mluMalloc(&extra, 1), mluErrorMemoryAllocation);
  EXPECT_EQ(extra, nullptr);
  {
    ScopedDevice on(1);  // capacity is per device
    void* elsewhere = nullptr;
    EXPECT_EQ(mluMalloc(&elsewhere, kMiB), mluSuccess);
    EXPECT_EQ(mluFree(elsewhere), mluSuccess);
  }
  ASSERT_EQ(mluFree(all), mluSuccess);

  size_t free3 = 0;
  ASSERT_EQ(mluMemGetInfo(&free3, nullptr), mluSuccess);
  EXPECT_EQ(free3, free0);
  ASSERT_EQ(mluMalloc(&p, kMiB), mluSuccess) << "the device must be usable after exhaustion";
  std::vector<char> in(kMiB, 'x'), out(kMiB, 0);
  EXPECT_EQ(mluMemcpy(p, in.data(), kMiB, mluMemcpyHostToDevice), mluSuccess);
  EXPECT_EQ(mluMemcpy(out.data(), p, kMiB, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(in, out);
  EXPECT_EQ(mluFree(p), mluSuccess);
}

TEST(Memory, DoubleFreeAndForeignPointers) {
  size_t before = free_bytes(0);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 4096), mluSuccess);

  int on_stack = 0;
  void* from_host_heap = std::malloc(64);
  void* pinned = nullptr;
  ASSERT_EQ(mluHostMalloc(&pinned, 64), mluSuccess);
  void* interior = static_cast<char*>(p) + 128;

  for (void* foreign : {static_cast<void*>(&on_stack), from_host_heap, interior, pinned,
                        reinterpret_cast<void*>(uintptr_t{0x10})}) {
    SCOPED_TRACE(foreign);
    EXPECT_EQ(mluFree(foreign), mluErrorInvalidDevicePointer);
    EXPECT_NE(std::string(mluGetLastErrorDetail()), "");
    EXPECT_EQ(mluFreeAsync(foreign, nullptr), mluErrorInvalidDevicePointer);
  }
  // None of that disturbed the real allocation.
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, p), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeDevice);
  EXPECT_EQ(on_stack, 0);

  ASSERT_EQ(mluFree(p), mluSuccess);
  EXPECT_EQ(mluFree(p), mluErrorInvalidDevicePointer) << "double free";
  EXPECT_EQ(mluFreeAsync(p, nullptr), mluErrorInvalidDevicePointer) << "double free (async)";
  EXPECT_EQ(free_bytes(0), before) << "a double free must not release memory twice";

  EXPECT_EQ(mluFreeHost(p), mluErrorInvalidValue) << "freed device memory is not pinned memory";
  EXPECT_EQ(mluFreeHost(from_host_heap), mluErrorInvalidValue);
  EXPECT_EQ(mluFreeHost(pinned), mluSuccess);
  EXPECT_EQ(mluFreeHost(pinned), mluErrorInvalidValue) << "double free of pinned memory";
  std::free(from_host_heap);
}

TEST(Memory, FreeWaitsForTheDevice) {
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 4096), mluSuccess);
  std::atomic<bool> kernel_started{false}, kernel_done{false};
  ScopedQueue queue(0);
  // A "kernel" that still uses the memory a while after mluFree is called.
  ASSERT_EQ(mluLaunchTask(queue, "slow kernel", [p, &kernel_started, &kernel_done] {
              kernel_started = true;
              std::this_thread::sleep_for(30ms);
              std::memset(p, 0x5a, 4096);
              kernel_done = true;
            }),
            mluSuccess);
  ASSERT_TRUE(eventually([&] { return kernel_started.load(); }));  // running, not finished
  ASSERT_EQ(mluFree(p), mluSuccess);
  EXPECT_TRUE(kernel_done) << "mluFree returned while the device still ran work";
}

TEST(Memory, FreeAsyncReturnsMemoryWhenTheQueueGetsThere) {
  constexpr size_t kBytes = 8 * kMiB;
  size_t before = free_bytes(0);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, kBytes), mluSuccess);
  size_t allocated = free_bytes(0);
  ASSERT_EQ(before - allocated, kBytes);

  ScopedQueue queue(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  ASSERT_EQ(mluFreeAsync(p, queue), mluSuccess);

  // The pointer is invalid at once...
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, p), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeUnregistered);
  EXPECT_EQ(mluFree(p), mluErrorInvalidDevicePointer);
  // ...but the memory still counts until the queue reaches the free.
  EXPECT_EQ(free_bytes(0), allocated);
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);

  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(free_bytes(0), before);
}

TEST(Memory, FreeAsyncOnTheDefaultQueueAndAnotherDevice) {
  ScopedDevice on(1);
  size_t before = free_bytes(1);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, kMiB), mluSuccess);
  ASSERT_EQ(mluFreeAsync(p, nullptr), mluSuccess);  // default queue of device 1
  ASSERT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(free_bytes(1), before);
}

TEST(Memory, FreeAsyncOnADestroyedQueueKeepsThePointer) {
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 4096), mluSuccess);
  ScopedQueue queue(0);
  mluQueue_t q = queue.release();
  ASSERT_EQ(mluQueueDestroy(q), mluSuccess);
  EXPECT_EQ(mluFreeAsync(p, q), mluErrorInvalidResourceHandle);
  EXPECT_EQ(mluFree(p), mluSuccess) << "a failed mluFreeAsync must leave the allocation alive";
}

TEST(Memory, PinnedHostMemoryAttributes) {
  void* pinned = nullptr;
  ASSERT_EQ(mluHostMalloc(&pinned, 1000), mluSuccess);
  ASSERT_NE(pinned, nullptr);
  std::memset(pinned, 1, 1000);  // real host memory

  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, pinned), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeHost);
  EXPECT_EQ(attributes.device, -1);
  EXPECT_EQ(attributes.basePointer, pinned);
  EXPECT_EQ(attributes.size, 1000u);

  ASSERT_EQ(mluPointerGetAttributes(&attributes, static_cast<char*>(pinned) + 999), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeHost);
  EXPECT_EQ(attributes.basePointer, pinned);

  size_t before = free_bytes(0);
  ASSERT_EQ(mluFreeHost(pinned), mluSuccess);
  EXPECT_EQ(free_bytes(0), before) << "pinned memory is not device memory";
  ASSERT_EQ(mluPointerGetAttributes(&attributes, pinned), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeUnregistered);

  void* zero = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(mluHostMalloc(&zero, 0), mluSuccess);
  EXPECT_EQ(zero, nullptr);
  EXPECT_EQ(mluFreeHost(nullptr), mluSuccess);
}

TEST(Memory, DevicePointerAttributes) {
  ScopedDevice on(1);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 5000), mluSuccess);

  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, p), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(attributes.basePointer, p);
  EXPECT_EQ(attributes.size, 5000u);

  void* interior = static_cast<char*>(p) + 4321;
  attributes = {};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, interior), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(attributes.basePointer, p);
  EXPECT_EQ(attributes.size, 5000u);

  ASSERT_EQ(mluPointerGetAttributes(&attributes, static_cast<char*>(p) + 5000), mluSuccess);
  EXPECT_NE(attributes.basePointer, p) << "one past the end is outside the allocation";

  ASSERT_EQ(mluFree(p), mluSuccess);
  ASSERT_EQ(mluPointerGetAttributes(&attributes, p), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeUnregistered) << "a freed pointer is no longer known";
}

TEST(Memory, UnregisteredHostPointerAttributes) {
  int on_stack = 0;
  std::vector<int> on_heap(16);
  for (const void* ptr : {static_cast<const void*>(&on_stack), static_cast<const void*>(on_heap.data())}) {
    mluPointerAttributes attributes{mluMemoryTypeDevice, 7, reinterpret_cast<void*>(0x1), 7};
    ASSERT_EQ(mluPointerGetAttributes(&attributes, ptr), mluSuccess);
    EXPECT_EQ(attributes.type, mluMemoryTypeUnregistered);
    EXPECT_EQ(attributes.device, -1);
    EXPECT_EQ(attributes.basePointer, nullptr);
    EXPECT_EQ(attributes.size, 0u);
  }
  EXPECT_EQ(mluPointerGetAttributes(nullptr, &on_stack), mluErrorInvalidValue);
}

TEST(Memory, FreeHostWaitsForEveryDevice) {
  void* pinned = nullptr;
  ASSERT_EQ(mluHostMalloc(&pinned, 64), mluSuccess);
  std::atomic<bool> started{false}, done{false};
  ScopedQueue queue(1);
  ASSERT_EQ(mluLaunchTask(queue, "slow reader", [pinned, &started, &done] {
              started = true;
              std::this_thread::sleep_for(30ms);
              std::memset(pinned, 0, 64);
              done = true;
            }),
            mluSuccess);
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  ASSERT_EQ(mluFreeHost(pinned), mluSuccess);
  EXPECT_TRUE(done) << "mluFreeHost returned while device 1 still used the memory";
}
