// Interprocess device memory (ipc.h). A second mapping in this process stands
// in for the other process: it is the same file mapped again, exactly what
// mluIpcOpenMemHandle does with a descriptor received over a socket.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

TEST(Ipc, OpenedMappingSeesTheSameMemoryAndCountsNowhere) {
  size_t before = free_bytes(0);
  void* made = nullptr;
  ASSERT_EQ(mluMallocShareable(&made, 4096), mluSuccess);
  EXPECT_GE(before - free_bytes(0), 4096u) << "a shareable allocation counts against its device";
  std::vector<int> data(1024, 7);
  ASSERT_EQ(mluMemcpy(made, data.data(), 4096, mluMemcpyHostToDevice), mluSuccess);

  mluIpcMemHandle_t handle{};
  ASSERT_EQ(mluIpcGetMemHandle(&handle, made), mluSuccess);
  EXPECT_EQ(handle.size, 4096u);
  size_t after_make = free_bytes(0);
  void* opened = nullptr;
  ASSERT_EQ(mluIpcOpenMemHandle(&opened, handle), mluSuccess);
  EXPECT_NE(opened, made);
  EXPECT_EQ(free_bytes(0), after_make) << "an opened mapping counts nowhere";

  std::vector<int> seen(1024, 0);
  ASSERT_EQ(mluMemcpy(seen.data(), opened, 4096, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(seen, data);
  int marker = -3;
  ASSERT_EQ(mluMemcpy(opened, &marker, sizeof marker, mluMemcpyHostToDevice), mluSuccess);
  int back = 0;
  ASSERT_EQ(mluMemcpy(&back, made, sizeof back, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(back, -3) << "writes through one mapping show through the other";

  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, static_cast<char*>(opened) + 100), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeDevice);
  EXPECT_EQ(attributes.basePointer, opened);

  // The maker frees first: the other mapping keeps the pages.
  ASSERT_EQ(mluFree(made), mluSuccess);
  EXPECT_EQ(free_bytes(0), before);
  back = 0;
  ASSERT_EQ(mluMemcpy(&back, static_cast<int*>(opened) + 1, sizeof back, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(back, 7);

  EXPECT_EQ(mluFree(opened), mluErrorInvalidDevicePointer) << "an opened mapping is closed, not freed";
  ASSERT_EQ(mluIpcCloseMemHandle(opened), mluSuccess);
  EXPECT_EQ(mluIpcCloseMemHandle(opened), mluErrorInvalidDevicePointer);
}

TEST(Ipc, HandlesOnlyForShareableAllocations) {
  void* plain = nullptr;
  ASSERT_EQ(mluMalloc(&plain, 256), mluSuccess);
  mluIpcMemHandle_t handle{};
  EXPECT_EQ(mluIpcGetMemHandle(&handle, plain), mluErrorInvalidValue);
  EXPECT_EQ(mluIpcCloseMemHandle(plain), mluErrorInvalidDevicePointer);
  ASSERT_EQ(mluFree(plain), mluSuccess);

  void* none = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(mluMallocShareable(&none, 0), mluSuccess);
  EXPECT_EQ(none, nullptr);
  void* opened = nullptr;
  EXPECT_EQ(mluIpcOpenMemHandle(&opened, {-1, 256}), mluErrorInvalidValue);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);  // a descriptor that is not a shareable allocation
  EXPECT_EQ(mluIpcOpenMemHandle(&opened, {pipe_fds[0], 256}), mluErrorInvalidValue);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(Ipc, ShareableAllocationRespectsCapacityAndFreesAsync) {
  void* too_big = nullptr;
  EXPECT_EQ(mluMallocShareable(&too_big, size_t(1) << 40), mluErrorMemoryAllocation);
  size_t before = free_bytes(0);
  void* made = nullptr;
  ASSERT_EQ(mluMallocShareable(&made, 1000), mluSuccess);
  ASSERT_EQ(mluFreeAsync(made, nullptr), mluSuccess);
  ASSERT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(free_bytes(0), before);
}
