// Reservations and on-demand mapping (mlu_runtime/virtual_memory.h).
#include <atomic>
#include <cstring>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

size_t granularity() {
  size_t g = 0;
  EXPECT_EQ(mluMemGetGranularity(&g), mluSuccess);
  return g;
}

}  // namespace

TEST(VirtualMemory, ReservingChargesNothingMappingChargesTheCapacity) {
  const size_t g = granularity();
  ASSERT_GT(g, 0u);
  EXPECT_EQ(g & (g - 1), 0u) << "the granularity is a power of two";
  const size_t before = free_bytes(0);
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 8 * g), mluSuccess);
  EXPECT_EQ(free_bytes(0), before) << "address space costs no device memory";
  ASSERT_EQ(mluMemMap(static_cast<char*>(base) + g, 2 * g), mluSuccess);
  EXPECT_EQ(before - free_bytes(0), 2 * g);
  ASSERT_EQ(mluMemUnmap(static_cast<char*>(base) + g, g), mluSuccess);
  EXPECT_EQ(before - free_bytes(0), g);
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
  EXPECT_EQ(free_bytes(0), before) << "freeing a reservation unmaps what is left";
}

TEST(VirtualMemory, MappedMemoryHoldsDataAcrossGranules) {
  const size_t g = granularity();
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 4 * g), mluSuccess);
  ASSERT_EQ(mluMemMap(base, g), mluSuccess);
  ASSERT_EQ(mluMemMap(static_cast<char*>(base) + g, g), mluSuccess);  // mapped separately, used as one range
  std::vector<unsigned char> in(2 * g), out(2 * g);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(mluMemcpy(base, in.data(), in.size(), mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemcpy(out.data(), base, out.size(), mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size()), 0);
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, static_cast<char*>(base) + g + 5), mluSuccess);
  EXPECT_EQ(attributes.type, mluMemoryTypeDevice);
  EXPECT_EQ(attributes.basePointer, base);
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
}

TEST(VirtualMemory, CopiesIntoUnmappedGranulesFail) {
  const size_t g = granularity();
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 2 * g), mluSuccess);
  ASSERT_EQ(mluMemMap(base, g), mluSuccess);
  std::vector<unsigned char> host(2 * g);
  EXPECT_EQ(mluMemcpy(base, host.data(), 2 * g, mluMemcpyHostToDevice), mluErrorInvalidValue)
      << "the copy runs into the unmapped second granule";
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("not mapped"), std::string::npos);
  EXPECT_EQ(mluMemcpy(host.data(), static_cast<char*>(base) + g, 16, mluMemcpyDeviceToHost), mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpy(base, host.data(), g, mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
}

TEST(VirtualMemory, MisuseIsRefusedAndChangesNothing) {
  const size_t g = granularity();
  const size_t before = free_bytes(0);
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 4 * g), mluSuccess);
  char* p = static_cast<char*>(base);
  EXPECT_EQ(mluMemMap(p + 1, g), mluErrorInvalidValue) << "not granule-aligned";
  EXPECT_EQ(mluMemMap(p, g + 1), mluErrorInvalidValue) << "not whole granules";
  EXPECT_EQ(mluMemMap(p + 3 * g, 2 * g), mluErrorInvalidValue) << "runs past the reservation";
  EXPECT_EQ(mluMemUnmap(p, g), mluErrorInvalidValue) << "nothing is mapped there";
  ASSERT_EQ(mluMemMap(p, 2 * g), mluSuccess);
  EXPECT_EQ(mluMemMap(p + g, 2 * g), mluErrorInvalidValue) << "partly mapped already";
  EXPECT_EQ(before - free_bytes(0), 2 * g) << "the failed map charged nothing";
  EXPECT_EQ(mluMemUnmap(p + g, 2 * g), mluErrorInvalidValue) << "partly unmapped";
  EXPECT_EQ(mluFree(base), mluErrorInvalidDevicePointer) << "a reservation is not an mluMalloc allocation";
  EXPECT_EQ(mluFreeAsync(base, nullptr), mluErrorInvalidDevicePointer);
  mluIpcMemHandle_t handle{};
  EXPECT_EQ(mluIpcGetMemHandle(&handle, p + 3 * g), mluErrorInvalidValue) << "unmapped memory cannot be shared";
  void* heap = nullptr;
  ASSERT_EQ(mluMalloc(&heap, 4096), mluSuccess);
  EXPECT_EQ(mluMemMap(heap, g), mluErrorInvalidValue) << "not a reservation";
  EXPECT_EQ(mluMemAddressFree(heap), mluErrorInvalidValue);
  ASSERT_EQ(mluFree(heap), mluSuccess);
  EXPECT_EQ(mluMemAddressFree(p + g), mluErrorInvalidValue) << "not the reservation's start";
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
  EXPECT_EQ(mluMemAddressFree(base), mluErrorInvalidValue) << "already freed";
  EXPECT_EQ(free_bytes(0), before);
}

TEST(VirtualMemory, MappingPastTheCapacityFailsAndChangesNothing) {
  const size_t g = granularity();
  const size_t free = free_bytes(0);
  const size_t too_much = (free / g + 1) * g;
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, too_much + g), mluSuccess);
  EXPECT_EQ(mluMemMap(base, too_much), mluErrorMemoryAllocation);
  EXPECT_EQ(free_bytes(0), free);
  ASSERT_EQ(mluMemMap(base, g), mluSuccess) << "a smaller map still fits";
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
  EXPECT_EQ(free_bytes(0), free);
}

TEST(VirtualMemory, ReservationBelongsToTheCurrentDevice) {
  const size_t g = granularity();
  ASSERT_EQ(mluSetDevice(1), mluSuccess);
  const size_t before = free_bytes(1);
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, g), mluSuccess);
  ASSERT_EQ(mluSetDevice(0), mluSuccess);
  ASSERT_EQ(mluMemMap(base, g), mluSuccess);  // charged to device 1, whatever is current
  EXPECT_EQ(before - free_bytes(1), g);
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, base), mluSuccess);
  EXPECT_EQ(attributes.device, 1);
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
  EXPECT_EQ(free_bytes(1), before);
}

TEST(VirtualMemory, UnmapAfterWaitsForItsQueueOnly) {
  // Note [Unmapping without the device]: a queue held by a task that waits on
  // something else (a collective's peer) does not hold up the unmap.
  const size_t g = granularity();
  void* base = nullptr;
  ASSERT_EQ(mluMemAddressReserve(&base, 2 * g), mluSuccess);
  ASSERT_EQ(mluMemMap(base, 2 * g), mluSuccess);
  std::atomic<bool> user_done{false};
  ScopedQueue user, busy;
  Gate peer;
  ASSERT_EQ(mluLaunchTask(busy, "collective", peer.blocker()), mluSuccess);
  ASSERT_EQ(mluLaunchTask(user, "last use",
                          [base, &user_done] {
                            std::this_thread::sleep_for(20ms);  // widens the window an unordered unmap would fall into
                            static_cast<char*>(base)[0] = 1;
                            user_done = true;
                          }),
            mluSuccess);
  ASSERT_EQ(mluMemUnmapAfter(base, g, user), mluSuccess);
  EXPECT_TRUE(user_done) << "the unmap waited for the range's queue";
  mluError_t busy_state = mluQueueQuery(busy);
  EXPECT_EQ(busy_state, mluErrorNotReady) << "and not for the blocked one";
  ScopedQueue elsewhere(1);
  EXPECT_EQ(mluMemUnmapAfter(static_cast<char*>(base) + g, g, elsewhere), mluErrorInvalidValue)
      << "a queue of another device";
  peer.open();
  ASSERT_EQ(mluMemAddressFree(base), mluSuccess);
}
