// The monitor registry (Note [Monitor registry] in monitor.h): this process's
// record shows its memory, queues and busy time; a dead writer's record is
// deleted by the next reader.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "../src/monitor_record.h"
#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

// This process's entry for physical device `device`, or nullptr.
const mluMonitorProcess* find_self(const std::vector<mluMonitorDevice>& devices, int device) {
  if (device >= int(devices.size())) return nullptr;
  for (const mluMonitorProcess& p : devices[device].processes) {
    if (p.pid == getpid()) return &p;
  }
  return nullptr;
}

std::vector<mluMonitorDevice> snapshot() {
  std::vector<mluMonitorDevice> devices;
  EXPECT_EQ(mluMonitorSnapshot(&devices), mluSuccess);
  return devices;
}

}  // namespace

TEST(Monitor, ListsDevicesWithoutStartingAnything) {
  // An empty registry of its own: other processes of this user may be using the devices with other capacities.
  char dir[] = "/tmp/mlu_monitor_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("TORCH_MLU_MONITOR_DIR", dir, 1);
  std::vector<mluMonitorDevice> devices = snapshot();
  unsetenv("TORCH_MLU_MONITOR_DIR");
  rmdir(dir);
  ASSERT_GE(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "MLU590 (software MLU)");
  EXPECT_EQ(devices[1].physical_id, 1);
  EXPECT_EQ(devices[0].capacity, 256 * kMiB);
  EXPECT_EQ(mluMonitorSnapshot(nullptr), mluErrorInvalidValue);
}

TEST(Monitor, ShowsThisProcessMemoryAsTheDeviceCountsIt) {
  ASSERT_EQ(mluSetDevice(1), mluSuccess);
  void* block = nullptr;
  ASSERT_EQ(mluMalloc(&block, 3 * kMiB), mluSuccess);
  size_t free = 0, total = 0;
  ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
  std::vector<mluMonitorDevice> devices = snapshot();
  const mluMonitorProcess* self = find_self(devices, 1);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->memory_used, total - free);
  EXPECT_NE(self->command.find("mlu_runtime_tests"), std::string::npos) << self->command;
  ASSERT_EQ(mluFree(block), mluSuccess);
  devices = snapshot();
  self = find_self(devices, 1);
  ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
  const size_t held = self != nullptr ? self->memory_used : 0;
  EXPECT_EQ(held, total - free);
  ASSERT_EQ(mluSetDevice(0), mluSuccess);
}

TEST(Monitor, CountsQueuesAndBusyTime) {
  ScopedQueue queue;
  std::vector<mluMonitorDevice> devices = snapshot();
  const mluMonitorProcess* self = find_self(devices, 0);
  ASSERT_NE(self, nullptr);
  const int queues = self->queues;
  EXPECT_GE(queues, 1);
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue.get(), "blocker", gate.blocker()), mluSuccess);
  std::this_thread::sleep_for(300ms);  // the device is busy this long
  devices = snapshot();
  self = find_self(devices, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_GE(self->busy_queues, 1);
  EXPECT_GE(self->utilization, 0.2);  // ~0.3 of the last second
  EXPECT_GE(devices[0].utilization, self->utilization);
  gate.open();
  ASSERT_EQ(mluQueueSynchronize(queue.get()), mluSuccess);
  // Busy periods are kept once they end, and no queue has work any more.
  devices = snapshot();
  self = find_self(devices, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->busy_queues, 0);
  EXPECT_GE(self->utilization, 0.2);
  EXPECT_LE(self->utilization, 1.0);
  mluQueue_t second = nullptr;
  ASSERT_EQ(mluQueueCreate(&second), mluSuccess);
  EXPECT_EQ(find_self(snapshot(), 0)->queues, queues + 1);
  ASSERT_EQ(mluQueueDestroy(second), mluSuccess);
  EXPECT_EQ(find_self(snapshot(), 0)->queues, queues);
}

// Note [Coarse busy clock]: a task run inline on its launcher counts its time.
TEST(Monitor, CountsTheTimeOfTasksRunInline) {
  ScopedQueue queue;
  std::this_thread::sleep_for(1200ms);  // earlier busy periods leave the one-second window
  std::vector<mluMonitorDevice> devices = snapshot();
  const mluMonitorProcess* self = find_self(devices, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_LE(self->utilization, 0.1);
  std::thread::id ran_on;
  ASSERT_EQ(mluLaunchSmallTask(queue.get(), "inline sleeper",
                               [&] {
                                 ran_on = std::this_thread::get_id();
                                 std::this_thread::sleep_for(300ms);
                               }),
            mluSuccess);
  ASSERT_EQ(ran_on, std::this_thread::get_id()) << "the small task did not run inline";
  devices = snapshot();
  self = find_self(devices, 0);
  ASSERT_NE(self, nullptr);
  EXPECT_GE(self->utilization, 0.2);  // ~0.3 of the last second
  EXPECT_EQ(self->busy_queues, 0);
}

TEST(Monitor, ReaderDeletesTheRecordOfADeadProcess) {
  ScopedQueue queue;  // makes sure this process has a record
  ASSERT_NE(find_self(snapshot(), 0), nullptr);
  const std::string dir = mluMonitorDirectory();
  std::ifstream own(dir + "/" + std::to_string(getpid()), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(own)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), sizeof(detail::MonitorRecord));
  // A pid that is certainly gone: a child that exited and was reaped.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  int32_t pid = dead;
  std::memcpy(bytes.data() + offsetof(detail::MonitorRecord, pid), &pid, sizeof pid);
  const std::string stale = dir + "/" + std::to_string(dead);
  std::ofstream(stale, std::ios::binary) << bytes;
  ASSERT_EQ(access(stale.c_str(), F_OK), 0);
  for (const mluMonitorDevice& device : snapshot()) {
    for (const mluMonitorProcess& p : device.processes) EXPECT_NE(p.pid, dead);
  }
  EXPECT_NE(access(stale.c_str(), F_OK), 0) << "the dead process's record is still there";
}
