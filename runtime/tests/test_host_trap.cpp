// Note [Host-access trap] (host_trap.h). The trap is chosen at the first runtime
// call, so each case runs in a fresh copy of this test binary with
// TORCH_MLU_TRAP_HOST_ACCESS=1 (the HostTrapChild suite, skipped otherwise);
// the HostTrap suite starts it and checks how it ended.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

namespace {

bool in_trap_child() {
  const char* trap = std::getenv("TORCH_MLU_TRAP_HOST_ACCESS");
  return trap != nullptr && std::strcmp(trap, "1") == 0;
}

struct ChildResult {
  int status = 0;
  std::string output;  // stdout and stderr
};

// Runs HostTrapChild.<name> in a fresh process with the trap on.
ChildResult run_child(const std::string& name) {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    setenv("TORCH_MLU_TRAP_HOST_ACCESS", "1", 1);
    const std::string filter = "--gtest_filter=HostTrapChild." + name;
    execl("/proc/self/exe", "mlu_runtime_tests", filter.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) result.output.append(buffer, size_t(n));
  close(pipe_fds[0]);
  waitpid(pid, &result.status, 0);
  return result;
}

}  // namespace

TEST(HostTrapChild, DeviceCodeAndCopiesWork) {
  if (!in_trap_child()) GTEST_SKIP() << "runs in a child started by HostTrap.*";
  ASSERT_TRUE(mluHostAccessTrapped());
  mluDeviceProp prop{};
  ASSERT_EQ(mluGetDeviceProperties(&prop, 0), mluSuccess);
  EXPECT_EQ(prop.directHostAccess, 0);
  std::vector<int> host(4096);
  for (size_t i = 0; i < host.size(); ++i) host[i] = int(i);
  int* device = nullptr;
  ASSERT_EQ(mluMalloc(reinterpret_cast<void**>(&device), host.size() * sizeof(int)), mluSuccess);
  EXPECT_NE(mluDevicePointer(device), device);  // the device mapping is elsewhere
  EXPECT_EQ(mluDevicePointer(host.data()), host.data());  // host memory is itself
  ASSERT_EQ(mluMemcpy(device, host.data(), host.size() * sizeof(int), mluMemcpyHostToDevice), mluSuccess);
  // A kernel doubles every element through the device mapping, on two queues at once.
  ScopedQueue first, second;
  const size_t half = host.size() / 2;
  auto twice = [](int* p, size_t n) {
    return [p = mluDevicePointer(p), n] {
      for (size_t i = 0; i < n; ++i) p[i] *= 2;
    };
  };
  ASSERT_EQ(mluLaunchTask(first.get(), "twice", twice(device, half)), mluSuccess);
  ASSERT_EQ(mluLaunchTask(second.get(), "twice", twice(device + half, half)), mluSuccess);
  ASSERT_EQ(mluDeviceSynchronize(), mluSuccess);
  std::vector<int> back(host.size());
  ASSERT_EQ(mluMemcpy(back.data(), device, back.size() * sizeof(int), mluMemcpyDeviceToHost), mluSuccess);
  for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(back[i], 2 * int(i));
  void* shared = nullptr;
  EXPECT_EQ(mluMallocShareable(&shared, 1024), mluErrorNotSupported);
  ASSERT_EQ(mluFree(device), mluSuccess);
  // Freed memory is reused, and its pages start zeroed again.
  ASSERT_EQ(mluMalloc(reinterpret_cast<void**>(&device), 4096), mluSuccess);
  int first_word = -1;
  ASSERT_EQ(mluMemcpy(&first_word, device, sizeof first_word, mluMemcpyDeviceToHost), mluSuccess);
  EXPECT_EQ(first_word, 0);
  ASSERT_EQ(mluFree(device), mluSuccess);
}

TEST(HostTrapChild, HostTouchStopsTheProgram) {
  if (!in_trap_child()) GTEST_SKIP() << "runs in a child started by HostTrap.*";
  int* device = nullptr;
  ASSERT_EQ(mluMalloc(reinterpret_cast<void**>(&device), 1 << 20), mluSuccess);
  std::printf("about to touch\n");
  std::fflush(stdout);
  *reinterpret_cast<volatile int*>(device + 100) = 1;  // a stray host write
  std::printf("survived\n");
}

TEST(HostTrap, DeviceCodeAndCopiesReachTrappedMemory) {
  ChildResult result = run_child("DeviceCodeAndCopiesWork");
  ASSERT_TRUE(WIFEXITED(result.status) && WEXITSTATUS(result.status) == 0) << result.output;
  EXPECT_NE(result.output.find("[  PASSED  ] 1 test"), std::string::npos) << result.output;
}

TEST(HostTrap, HostAccessIsReportedAndStops) {
  ChildResult result = run_child("HostTouchStopsTheProgram");
  // The fault goes on to the previous handler: the default one kills the child with SIGSEGV; under a
  // sanitizer, the sanitizer's reports it and exits with an error.
  ASSERT_FALSE(WIFEXITED(result.status) && WEXITSTATUS(result.status) == 0) << result.output;
  if (WIFSIGNALED(result.status)) EXPECT_EQ(WTERMSIG(result.status), SIGSEGV);
  const std::string& out = result.output;
  EXPECT_NE(out.find("about to touch"), std::string::npos) << out;
  EXPECT_EQ(out.find("survived"), std::string::npos) << out;
  EXPECT_NE(out.find("host code touched device memory at"), std::string::npos) << out;
  EXPECT_NE(out.find("it is 400 bytes into an allocation of 1048576 bytes"), std::string::npos) << out;
  EXPECT_NE(out.find("on mlu:0, allocated at:"), std::string::npos) << out;
  EXPECT_NE(out.find("the access was made at:"), std::string::npos) << out;
}
