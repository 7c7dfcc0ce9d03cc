// Copies: directions, peer copies, pinned (asynchronous) versus pageable
// (synchronous) host memory, validation.
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

std::vector<int> iota_vector(size_t n, int first) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Device memory read back through a blocking copy.
std::vector<int> read_back(const void* device_ptr, size_t n) {
  std::vector<int> out(n, -1);
  EXPECT_EQ(mluMemcpy(out.data(), device_ptr, n * sizeof(int), mluMemcpyDeviceToHost), mluSuccess);
  return out;
}

}  // namespace

TEST(Memcpy, HostToDeviceToHost) {
  constexpr size_t n = 10000;
  std::vector<int> in = iota_vector(n, 1);
  DeviceBuffer d(n * sizeof(int));
  ASSERT_EQ(mluMemcpy(d.get(), in.data(), n * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  EXPECT_EQ(read_back(d.get(), n), in);
}

TEST(Memcpy, DeviceToDeviceSameDevice) {
  constexpr size_t n = 4096;
  std::vector<int> in = iota_vector(n, 7);
  DeviceBuffer a(n * sizeof(int)), b(n * sizeof(int));
  ASSERT_EQ(mluMemcpy(a.get(), in.data(), n * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemcpy(b.get(), a.get(), n * sizeof(int), mluMemcpyDeviceToDevice), mluSuccess);
  EXPECT_EQ(read_back(b.get(), n), in);
  // Partial copies between interior pointers.
  ASSERT_EQ(mluMemcpy(b.as<int>() + 10, a.as<int>() + 100, 5 * sizeof(int), mluMemcpyDeviceToDevice), mluSuccess);
  std::vector<int> out = read_back(b.get(), n);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[10 + i], in[100 + i]);
  EXPECT_EQ(out[9], in[9]);
  EXPECT_EQ(out[15], in[15]);
}

TEST(Memcpy, DeviceToDeviceAcrossDevicesWithMemcpy) {
  constexpr size_t n = 1000;
  std::vector<int> in = iota_vector(n, -500);
  DeviceBuffer on0(n * sizeof(int), 0), on1(n * sizeof(int), 1);
  ASSERT_EQ(mluMemcpy(on0.get(), in.data(), n * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemcpy(on1.get(), on0.get(), n * sizeof(int), mluMemcpyDeviceToDevice), mluSuccess);
  EXPECT_EQ(read_back(on1.get(), n), in);
}

TEST(Memcpy, PeerCopiesBothWays) {
  constexpr size_t n = 2048;
  std::vector<int> in0 = iota_vector(n, 0), in1 = iota_vector(n, 100000);
  DeviceBuffer a0(n * sizeof(int), 0), b0(n * sizeof(int), 0), a1(n * sizeof(int), 1), b1(n * sizeof(int), 1);
  ASSERT_EQ(mluMemcpy(a0.get(), in0.data(), n * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  ASSERT_EQ(mluMemcpy(a1.get(), in1.data(), n * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  ScopedQueue q0(0), q1(1);
  // 0 -> 1 on a queue of the source device, 1 -> 0 on a queue of the destination device.
  ASSERT_EQ(mluMemcpyPeerAsync(b1.get(), 1, a0.get(), 0, n * sizeof(int), q0), mluSuccess);
  ASSERT_EQ(mluMemcpyPeerAsync(b0.get(), 0, a1.get(), 1, n * sizeof(int), q0), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(q0), mluSuccess);
  EXPECT_EQ(read_back(b1.get(), n), in0);
  EXPECT_EQ(read_back(b0.get(), n), in1);

  ASSERT_EQ(mluMemcpyPeerAsync(b0.get(), 0, a0.get(), 0, 16, q1), mluErrorInvalidValue)
      << "a peer copy runs on a queue of one of its devices";
  EXPECT_EQ(mluMemcpyPeerAsync(b1.get(), 0, a0.get(), 0, 16, q0), mluErrorInvalidValue)
      << "device ordinals must match the pointers";
  EXPECT_EQ(mluMemcpyPeerAsync(b1.get(), 2, a0.get(), 0, 16, q0), mluErrorInvalidDevice);
  std::vector<int> host(n);
  EXPECT_EQ(mluMemcpyPeerAsync(host.data(), 1, a0.get(), 0, 16, q0), mluErrorInvalidMemcpyDirection);
  EXPECT_EQ(mluMemcpyPeerAsync(b1.get(), 1, a0.get(), 0, n * sizeof(int) + 1, q0), mluErrorInvalidValue);
}

TEST(Memcpy, AsyncFromPinnedIsAsynchronous) {
  constexpr size_t n = 1024;
  constexpr size_t bytes = n * sizeof(int);
  std::vector<int> zeros(n, 0);
  DeviceBuffer d(bytes);
  PinnedBuffer pinned(bytes);
  std::vector<int> expected = iota_vector(n, 3);
  std::memcpy(pinned.get(), expected.data(), bytes);
  ASSERT_EQ(mluMemcpy(d.get(), zeros.data(), bytes, mluMemcpyHostToDevice), mluSuccess);

  ScopedQueue queue(0);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate.blocker()), mluSuccess);
  // Returns although the queue cannot run the copy yet.
  ASSERT_EQ(mluMemcpyAsync(d.get(), pinned.get(), bytes, mluMemcpyHostToDevice, queue), mluSuccess);
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
  // The default queue is not blocked: the device memory is still the old data.
  EXPECT_EQ(read_back(d.get(), n), zeros);

  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(read_back(d.get(), n), expected);

  // And back, device to pinned, also queued behind a blocker.
  std::memset(pinned.get(), 0, bytes);
  Gate gate2;
  ASSERT_EQ(mluLaunchTask(queue, "blocker", gate2.blocker()), mluSuccess);
  ASSERT_EQ(mluMemcpyAsync(pinned.get(), d.get(), bytes, mluMemcpyDeviceToHost, queue), mluSuccess);
  EXPECT_EQ(mluQueueQuery(queue), mluErrorNotReady);
  gate2.open();
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(std::memcmp(pinned.get(), expected.data(), bytes), 0);
}

TEST(Memcpy, AsyncToPageableIsSynchronous) {
  constexpr size_t n = 1024;
  constexpr size_t bytes = n * sizeof(int);
  DeviceBuffer d(bytes);
  std::vector<int> zeros(n, 0);
  ASSERT_EQ(mluMemcpy(d.get(), zeros.data(), bytes, mluMemcpyHostToDevice), mluSuccess);

  ScopedQueue queue(0);
  int* device_ints = d.as<int>();
  // A slow "kernel" writes the device memory; the copy is queued behind it.
  ASSERT_EQ(mluLaunchTask(queue, "slow kernel", [device_ints] {
              std::this_thread::sleep_for(50ms);
              for (size_t i = 0; i < n; ++i) device_ints[i] = int(i) * 2;
            }),
            mluSuccess);
  std::vector<int> pageable(n, -1);
  ASSERT_EQ(mluMemcpyAsync(pageable.data(), d.get(), bytes, mluMemcpyDeviceToHost, queue), mluSuccess);
  // No synchronize: the data must already be there.
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(pageable[i], int(i) * 2) << i;
  EXPECT_EQ(mluQueueQuery(queue), mluSuccess);
}

TEST(Memcpy, AsyncFromPageableIsSynchronous) {
  constexpr size_t n = 1024;
  constexpr size_t bytes = n * sizeof(int);
  DeviceBuffer d(bytes);
  ScopedQueue queue(0);
  ASSERT_EQ(mluLaunchTask(queue, "slow", [] { std::this_thread::sleep_for(50ms); }), mluSuccess);
  std::vector<int> source = iota_vector(n, 1);
  std::vector<int> expected = source;
  ASSERT_EQ(mluMemcpyAsync(d.get(), source.data(), bytes, mluMemcpyHostToDevice, queue), mluSuccess);
  // The caller may reuse the buffer at once.
  std::fill(source.begin(), source.end(), -7);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(read_back(d.get(), n), expected);
}

TEST(Memcpy, PageableCopiesReportTheirQueuesErrors) {
  // A blocking copy is a synchronizing call.
  DeviceBuffer d(64);
  ScopedQueue queue(0);
  ASSERT_EQ(mluLaunchTask(queue, "failing_kernel", [](TaskContext& ctx) { ctx.fail("bad"); }), mluSuccess);
  char host[64] = {};
  EXPECT_EQ(mluMemcpyAsync(host, d.get(), 64, mluMemcpyDeviceToHost, queue), mluErrorLaunchFailure);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("failing_kernel"), std::string::npos);
  EXPECT_EQ(mluMemcpyAsync(host, d.get(), 64, mluMemcpyDeviceToHost, queue), mluSuccess);
}

TEST(Memcpy, WrongDirection) {
  DeviceBuffer d(256);
  PinnedBuffer pinned(256);
  std::vector<char> host(256);
  EXPECT_EQ(mluMemcpy(host.data(), d.get(), 256, mluMemcpyHostToDevice), mluErrorInvalidMemcpyDirection);
  EXPECT_NE(std::string(mluGetLastErrorDetail()), "");
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 256, mluMemcpyDeviceToHost), mluErrorInvalidMemcpyDirection);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 256, mluMemcpyDeviceToDevice), mluErrorInvalidMemcpyDirection);
  EXPECT_EQ(mluMemcpy(host.data(), pinned.get(), 256, mluMemcpyDeviceToHost), mluErrorInvalidMemcpyDirection)
      << "pinned memory is host memory";
  EXPECT_EQ(mluMemcpy(d.get(), d.get(), 256, mluMemcpyHostToHost), mluErrorInvalidMemcpyDirection);
  EXPECT_EQ(mluMemcpyAsync(host.data(), d.get(), 256, mluMemcpyHostToDevice, nullptr),
            mluErrorInvalidMemcpyDirection);
}

TEST(Memcpy, RangePastTheAllocationEnd) {
  DeviceBuffer d(1000);
  PinnedBuffer pinned(1000);
  std::vector<char> host(2000);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 1001, mluMemcpyHostToDevice), mluErrorInvalidValue);
  EXPECT_NE(std::string(mluGetLastErrorDetail()).find("past the end"), std::string::npos)
      << mluGetLastErrorDetail();
  EXPECT_EQ(mluMemcpy(host.data(), d.get(), 1001, mluMemcpyDeviceToHost), mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpy(static_cast<char*>(d.get()) + 999, host.data(), 2, mluMemcpyHostToDevice),
            mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpyAsync(d.get(), pinned.get(), 1001, mluMemcpyHostToDevice, nullptr), mluErrorInvalidValue);
  // Exactly up to the end is fine.
  EXPECT_EQ(mluMemcpy(static_cast<char*>(d.get()) + 999, host.data(), 1, mluMemcpyHostToDevice), mluSuccess);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 1000, mluMemcpyHostToDevice), mluSuccess);
}

TEST(Memcpy, ZeroBytes) {
  DeviceBuffer d(64);
  std::vector<char> host(64);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 0, mluMemcpyHostToDevice), mluSuccess);
  EXPECT_EQ(mluMemcpy(host.data(), d.get(), 0, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(mluMemcpyAsync(d.get(), host.data(), 0, mluMemcpyHostToDevice, nullptr), mluSuccess);
  EXPECT_EQ(mluMemcpyAsync(host.data(), d.get(), 0, mluMemcpyDefault, nullptr), mluSuccess);
  DeviceBuffer other(64, 1);
  EXPECT_EQ(mluMemcpyPeerAsync(other.get(), 1, d.get(), 0, 0, nullptr), mluSuccess);
}

TEST(Memcpy, BadArguments) {
  DeviceBuffer d(64);
  std::vector<char> host(64);
  EXPECT_EQ(mluMemcpy(nullptr, host.data(), 8, mluMemcpyHostToDevice), mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpy(d.get(), nullptr, 8, mluMemcpyHostToDevice), mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 8, static_cast<mluMemcpyKind>(17)), mluErrorInvalidValue);
  EXPECT_EQ(mluMemcpy(d.get(), host.data(), 8, static_cast<mluMemcpyKind>(-1)), mluErrorInvalidValue);
  ScopedQueue scoped(0);
  mluQueue_t dead = scoped.release();
  ASSERT_EQ(mluQueueDestroy(dead), mluSuccess);
  EXPECT_EQ(mluMemcpyAsync(d.get(), host.data(), 8, mluMemcpyHostToDevice, dead), mluErrorInvalidResourceHandle);
}

TEST(Memcpy, DefaultKindInfersTheDirection) {
  constexpr size_t n = 256;
  constexpr size_t bytes = n * sizeof(int);
  std::vector<int> in = iota_vector(n, 11), out(n, 0), host_copy(n, 0);
  DeviceBuffer a(bytes, 0), b(bytes, 1);
  PinnedBuffer pinned(bytes);
  ASSERT_EQ(mluMemcpy(a.get(), in.data(), bytes, mluMemcpyDefault), mluSuccess);          // H2D
  ASSERT_EQ(mluMemcpy(b.get(), a.get(), bytes, mluMemcpyDefault), mluSuccess);            // D2D
  ASSERT_EQ(mluMemcpy(pinned.get(), b.get(), bytes, mluMemcpyDefault), mluSuccess);       // D2H (pinned)
  ASSERT_EQ(mluMemcpy(out.data(), pinned.get(), bytes, mluMemcpyDefault), mluSuccess);    // H2H
  EXPECT_EQ(out, in);
  ASSERT_EQ(mluMemcpy(host_copy.data(), in.data(), bytes, mluMemcpyDefault), mluSuccess); // H2H pageable
  EXPECT_EQ(host_copy, in);
  std::vector<int> async_out(n, 0);
  ASSERT_EQ(mluMemcpyAsync(async_out.data(), b.get(), bytes, mluMemcpyDefault, nullptr), mluSuccess);
  EXPECT_EQ(async_out, in) << "pageable destination: synchronous";
}

TEST(Memcpy, CopiesAreOrderedWithTheQueuesWork) {
  constexpr size_t n = 64;
  constexpr size_t bytes = n * sizeof(int);
  DeviceBuffer d(bytes);
  PinnedBuffer in(bytes), out(bytes);
  ScopedQueue queue(0);
  int* device_ints = d.as<int>();
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < n; ++i) in.as<int>()[i] = round;
    ASSERT_EQ(mluMemcpyAsync(d.get(), in.get(), bytes, mluMemcpyHostToDevice, queue), mluSuccess);
    ASSERT_EQ(mluLaunchTask(queue, "add one", [device_ints] {
                for (size_t i = 0; i < n; ++i) device_ints[i] += 1;
              }),
              mluSuccess);
    ASSERT_EQ(mluMemcpyAsync(out.get(), d.get(), bytes, mluMemcpyDeviceToHost, queue), mluSuccess);
    ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out.as<int>()[i], round + 1);
  }
}

TEST(Memcpy, ATaskCannotWaitForACopyOnItsOwnQueue) {
  // A pageable copy must wait, which a task cannot do on its own queue: the
  // call fails, and then it must not copy anything later either (the caller
  // owns the pageable buffer again as soon as the call returns).
  std::vector<int> zeros(16, 0), ones(16, 1);
  DeviceBuffer d(sizeof(int) * 16);
  ASSERT_EQ(mluMemcpy(d.get(), ones.data(), sizeof(int) * 16, mluMemcpyHostToDevice), mluSuccess);
  std::vector<int> pageable(16, 0);
  mluError_t async_status = mluSuccess, plain_status = mluSuccess;
  ScopedQueue queue(0);
  mluQueue_t self = queue;
  void* device_ptr = d.get();
  ASSERT_EQ(mluLaunchTask(queue, "copier", [&, self, device_ptr] {
              async_status = mluMemcpyAsync(pageable.data(), device_ptr, sizeof(int) * 16,
                                            mluMemcpyDeviceToHost, self);
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  EXPECT_EQ(async_status, mluErrorInvalidValue);
  EXPECT_EQ(pageable, zeros) << "a copy that failed must not happen";

  // Same for a blocking copy issued by a task of the default queue it would use.
  pageable = zeros;
  ASSERT_EQ(mluLaunchTask(nullptr, "copier", [&, device_ptr] {
              plain_status = mluMemcpy(pageable.data(), device_ptr, sizeof(int) * 16, mluMemcpyDeviceToHost);
            }),
            mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(nullptr), mluSuccess);
  EXPECT_EQ(plain_status, mluErrorInvalidValue);
  EXPECT_EQ(pageable, zeros);
}
