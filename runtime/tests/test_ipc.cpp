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

TEST(Ipc, AnyDeviceMemoryIsSharedInPlace) {
  // Note [Shareable device memory]: plain mluMalloc memory has a handle, for any byte of it.
  void* plain = nullptr;
  ASSERT_EQ(mluMalloc(&plain, 4096), mluSuccess);
  std::vector<int> data(1024);
  for (int i = 0; i < 1024; ++i) data[i] = i;
  ASSERT_EQ(mluMemcpy(plain, data.data(), 4096, mluMemcpyHostToDevice), mluSuccess);
  char* inside = static_cast<char*>(plain) + 1000;
  mluIpcMemHandle_t handle{};
  ASSERT_EQ(mluIpcGetMemHandle(&handle, inside), mluSuccess);
  EXPECT_EQ(handle.offset, 1000u);
  EXPECT_EQ(handle.size, 4096u - 1000u);
  handle.size = 400;  // share just these bytes
  bool in_use = true;
  ASSERT_EQ(mluIpcMemInUse(inside, 400, &in_use), mluSuccess);
  EXPECT_FALSE(in_use);

  void* opened = nullptr;
  ASSERT_EQ(mluIpcOpenMemHandle(&opened, handle), mluSuccess);
  int seen = -1;
  ASSERT_EQ(mluMemcpy(&seen, opened, sizeof seen, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(seen, 250) << "the opened range starts at byte 1000";
  int marker = -9;
  ASSERT_EQ(mluMemcpy(static_cast<char*>(opened) + 8, &marker, sizeof marker, mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemcpy(&seen, inside + 8, sizeof seen, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(seen, -9) << "the maker's pointer did not move and sees the write";
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, opened), mluSuccess);
  EXPECT_EQ(attributes.basePointer, opened);
  EXPECT_EQ(attributes.size, 400u);

  ASSERT_EQ(mluIpcMemInUse(inside, 400, &in_use), mluSuccess);
  EXPECT_TRUE(in_use) << "an opened range is in use";
  ASSERT_EQ(mluIpcMemInUse(inside + 399, 1, &in_use), mluSuccess);
  EXPECT_TRUE(in_use);
  ASSERT_EQ(mluIpcMemInUse(plain, 1000, &in_use), mluSuccess);
  EXPECT_FALSE(in_use) << "the bytes before the range are not";
  ASSERT_EQ(mluIpcMemInUse(inside + 400, 100, &in_use), mluSuccess);
  EXPECT_FALSE(in_use) << "nor the bytes after it";
  ASSERT_EQ(mluIpcMemInUse(opened, 400, &in_use), mluSuccess);
  EXPECT_FALSE(in_use) << "an opened mapping does not count against itself";
  EXPECT_EQ(mluIpcMemInUse(inside, 5000, &in_use), mluErrorInvalidValue) << "past the allocation";

  ASSERT_EQ(mluIpcCloseMemHandle(opened), mluSuccess);
  ASSERT_EQ(mluIpcMemInUse(inside, 400, &in_use), mluSuccess);
  EXPECT_FALSE(in_use) << "closing lets go";
  EXPECT_EQ(mluIpcCloseMemHandle(plain), mluErrorInvalidDevicePointer);
  ASSERT_EQ(mluFree(plain), mluSuccess);

  void* pinned = nullptr;
  ASSERT_EQ(mluHostMalloc(&pinned, 256), mluSuccess);
  EXPECT_EQ(mluIpcGetMemHandle(&handle, pinned), mluErrorInvalidValue) << "pinned host memory is not device memory";
  ASSERT_EQ(mluFreeHost(pinned), mluSuccess);

  void* none = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(mluMallocShareable(&none, 0), mluSuccess);
  EXPECT_EQ(none, nullptr);
  void* bad = nullptr;
  EXPECT_EQ(mluIpcOpenMemHandle(&bad, {-1, 256}), mluErrorInvalidValue);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);  // a descriptor that is not a shareable allocation
  EXPECT_EQ(mluIpcOpenMemHandle(&bad, {pipe_fds[0], 256}), mluErrorInvalidValue);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(Ipc, OpenedRangeBeyondTheFileIsRefused) {
  void* made = nullptr;
  ASSERT_EQ(mluMalloc(&made, 4096), mluSuccess);
  mluIpcMemHandle_t handle{};
  ASSERT_EQ(mluIpcGetMemHandle(&handle, made), mluSuccess);
  handle.offset = 4000;
  handle.size = 200;
  void* opened = nullptr;
  EXPECT_EQ(mluIpcOpenMemHandle(&opened, handle), mluErrorInvalidValue);
  ASSERT_EQ(mluFree(made), mluSuccess);
}

TEST(Ipc, MappedPartsOfAReservationAreSharedInPlace) {
  size_t g = 0;
  ASSERT_EQ(mluMemGetGranularity(&g), mluSuccess);
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 4 * g), mluSuccess);
  char* p = static_cast<char*>(base);
  mluIpcMemHandle_t handle{};
  EXPECT_EQ(mluIpcGetMemHandle(&handle, p + g), mluErrorInvalidValue) << "nothing is mapped there";
  ASSERT_EQ(mluMemMap(p + g, g), mluSuccess);
  const int value = 42;
  ASSERT_EQ(mluMemcpy(p + g + 64, &value, sizeof value, mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluIpcGetMemHandle(&handle, p + g + 64), mluSuccess);
  EXPECT_EQ(handle.offset, g + 64);
  handle.size = 128;
  void* opened = nullptr;
  ASSERT_EQ(mluIpcOpenMemHandle(&opened, handle), mluSuccess);
  int seen = 0;
  ASSERT_EQ(mluMemcpy(&seen, opened, sizeof seen, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(seen, 42);
  bool in_use = false;
  ASSERT_EQ(mluIpcMemInUse(p + g, g, &in_use), mluSuccess);
  EXPECT_TRUE(in_use);
  // Unmapping in the maker leaves the opener its pages (ipc.h: they live while mapped).
  ASSERT_EQ(mluMemUnmap(p + g, g), mluSuccess);
  seen = 0;
  ASSERT_EQ(mluMemcpy(&seen, opened, sizeof seen, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(seen, 42);
  ASSERT_EQ(mluIpcCloseMemHandle(opened), mluSuccess);
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
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
