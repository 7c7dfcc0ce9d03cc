// Forked children: a child forked after the runtime started gets
// mluErrorForkedChild from every call that would use a device, at once
// (Note [Forked children] in device.h).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

// Runs `child` in a forked child that must exit 0 within 10 s; returns a
// description of how it ended otherwise ("" on success).
template <class F>
std::string run_in_child(F child) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);  // a hang becomes SIGALRM, not a hung test
    _exit(child());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  if (WEXITSTATUS(status) != 0) return "failed checks, mask " + std::to_string(WEXITSTATUS(status));
  return "";
}

bool forked_error(mluError_t status) {
  return status == mluErrorForkedChild &&
         std::string(mluGetLastErrorDetail()).find("forked after the MLU runtime started") != std::string::npos;
}

}  // namespace

TEST(Fork, EveryDeviceUseInAChildFailsAtOnce) {
  DeviceBuffer buffer(64);
  PinnedBuffer pinned(64);
  ScopedQueue queue(0);
  ScopedEvent event;
  ASSERT_EQ(mluLaunchTask(queue, "started", [] {}), mluSuccess);
  ASSERT_EQ(mluEventRecord(event, queue), mluSuccess);
  ASSERT_EQ(mluQueueSynchronize(queue), mluSuccess);
  // A busy queue at fork time: its device thread holds no lock the child needs.
  Gate gate;
  ASSERT_EQ(mluLaunchTask(queue, "busy", gate.blocker()), mluSuccess);

  const std::string outcome = run_in_child([&] {
    int failed = 0;
    char host[64];
    void* ptr = nullptr;
    mluQueue_t created = nullptr;
    if (!forked_error(mluLaunchTask(queue, "in child", [] {}))) failed |= 1;
    if (!forked_error(mluLaunchTask(nullptr, "in child", [] {}))) failed |= 1;
    if (!forked_error(mluQueueSynchronize(queue))) failed |= 2;
    if (!forked_error(mluDeviceSynchronize())) failed |= 2;
    if (!forked_error(mluEventSynchronize(event)) || !forked_error(mluEventRecord(event, queue))) failed |= 4;
    if (!forked_error(mluMalloc(&ptr, 64)) || !forked_error(mluHostMalloc(&ptr, 64))) failed |= 8;
    if (!forked_error(mluFree(buffer.get())) || !forked_error(mluFreeHost(pinned.get()))) failed |= 8;
    if (!forked_error(mluMemcpy(host, buffer.get(), 64, mluMemcpyDeviceToHost))) failed |= 16;
    if (!forked_error(mluQueueCreate(&created))) failed |= 32;
    int count = 0;
    mluDeviceProp prop{};
    if (mluGetDeviceCount(&count) != mluSuccess || count != 2) failed |= 64;
    if (mluGetDeviceProperties(&prop, 1) != mluSuccess) failed |= 64;
    return failed;
  });
  EXPECT_EQ(outcome, "");
  gate.open();
  EXPECT_EQ(mluQueueSynchronize(queue), mluSuccess) << "the parent goes on";
}
