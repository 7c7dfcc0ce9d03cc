// Devices: count, properties, the per-thread current device, invalid ordinals,
// and the parsing of the configuration variables (src/config.h).
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../src/config.h"
#include "test_util.h"

using namespace mlu;
using namespace mlu_test;

TEST(Device, CountMatchesEnvironment) {
  int count = -1;
  ASSERT_EQ(mluGetDeviceCount(&count), mluSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(mluGetDeviceCount(nullptr), mluErrorInvalidValue);
}

TEST(Device, Properties) {
  for (int d = 0; d < 2; ++d) {
    mluDeviceProp prop;
    std::memset(&prop, 0xff, sizeof prop);
    ASSERT_EQ(mluGetDeviceProperties(&prop, d), mluSuccess);
    size_t name_length = strnlen(prop.name, sizeof prop.name);
    EXPECT_GT(name_length, 0u);
    EXPECT_LT(name_length, sizeof prop.name) << "name must be NUL-terminated";
    EXPECT_EQ(prop.totalGlobalMem, 256 * kMiB);
    EXPECT_GT(prop.major, 0);
    EXPECT_GE(prop.minor, 0);
    EXPECT_GT(prop.multiProcessorCount, 0);
    EXPECT_EQ(prop.multiProcessorCount, prop.clusterCount * prop.coresPerCluster);
    EXPECT_EQ(prop.isIntegrated, 0);
    if (std::getenv("MLU_VISIBLE_DEVICES") == nullptr && std::getenv("CN_VISIBLE_DEVICES") == nullptr) {
      EXPECT_EQ(prop.physicalId, d);
    }
  }
  mluDeviceProp prop;
  EXPECT_EQ(mluGetDeviceProperties(nullptr, 0), mluErrorInvalidValue);
  EXPECT_EQ(mluGetDeviceProperties(&prop, 2), mluErrorInvalidDevice);
}

TEST(Device, MemGetInfoReportsCapacity) {
  for (int d = 0; d < 2; ++d) {
    ScopedDevice on(d);
    size_t free = 0, total = 0;
    ASSERT_EQ(mluMemGetInfo(&free, &total), mluSuccess);
    EXPECT_EQ(total, 256 * kMiB);
    EXPECT_LE(free, total);
  }
}

TEST(Device, Versions) {
  int runtime = 0, driver = 0;
  ASSERT_EQ(mluRuntimeGetVersion(&runtime), mluSuccess);
  ASSERT_EQ(mluDriverGetVersion(&driver), mluSuccess);
  EXPECT_EQ(runtime, kMluRuntimeVersion);
  EXPECT_GT(driver, 0);
  EXPECT_EQ(mluRuntimeGetVersion(nullptr), mluErrorInvalidValue);
}

TEST(Device, CurrentDeviceIsPerHostThread) {
  int device = -1;
  ASSERT_EQ(mluGetDevice(&device), mluSuccess);
  ASSERT_EQ(device, 0);

  std::promise<void> set_done;
  Gate may_exit;
  int seen_in_setter = -1;
  std::thread setter([&] {
    EXPECT_EQ(mluSetDevice(1), mluSuccess);
    mluGetDevice(&seen_in_setter);
    set_done.set_value();
    may_exit.wait();  // keep the setter alive while the others look
  });
  set_done.get_future().wait();
  EXPECT_EQ(seen_in_setter, 1);

  int seen_in_other = -1;
  std::thread other([&] { mluGetDevice(&seen_in_other); });
  other.join();
  EXPECT_EQ(seen_in_other, 0) << "a new host thread starts on device 0";

  ASSERT_EQ(mluGetDevice(&device), mluSuccess);
  EXPECT_EQ(device, 0) << "another thread's mluSetDevice leaked into this one";
  may_exit.open();
  setter.join();
}

TEST(Device, SetDeviceSelectsWhereAllocationsGo) {
  ScopedDevice on(1);
  void* p = nullptr;
  ASSERT_EQ(mluMalloc(&p, 1024), mluSuccess);
  mluPointerAttributes attributes{};
  ASSERT_EQ(mluPointerGetAttributes(&attributes, p), mluSuccess);
  EXPECT_EQ(attributes.device, 1);
  EXPECT_EQ(mluFree(p), mluSuccess);
}

TEST(Device, InvalidOrdinals) {
  for (int bad : {-1, 2, 99}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(mluSetDevice(bad), mluErrorInvalidDevice);
    std::string detail = mluGetLastErrorDetail();
    EXPECT_NE(detail.find(std::to_string(bad)), std::string::npos) << detail;
    EXPECT_NE(detail.find("0..1"), std::string::npos) << "detail should name the valid range: " << detail;

    mluDeviceProp prop;
    EXPECT_EQ(mluGetDeviceProperties(&prop, bad), mluErrorInvalidDevice);
    EXPECT_NE(std::string(mluGetLastErrorDetail()).find("0..1"), std::string::npos);
    EXPECT_EQ(mluDeviceSynchronizeOn(bad), mluErrorInvalidDevice);
    mluQueue_t queue = nullptr;
    EXPECT_EQ(mluGetDefaultQueue(bad, &queue), mluErrorInvalidDevice);
  }
  int device = -1;
  ASSERT_EQ(mluGetDevice(&device), mluSuccess);
  EXPECT_EQ(device, 0) << "a failed mluSetDevice must not change the current device";
}

TEST(Device, LastErrorDetailIsPerHostThread) {
  ASSERT_EQ(mluSetDevice(99), mluErrorInvalidDevice);
  std::string mine = mluGetLastErrorDetail();
  ASSERT_FALSE(mine.empty());
  std::string theirs = "unset";
  std::thread other([&] { theirs = mluGetLastErrorDetail(); });
  other.join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(std::string(mluGetLastErrorDetail()), mine);
}

TEST(Device, SynchronizeIdleDevices) {
  EXPECT_EQ(mluDeviceSynchronize(), mluSuccess);
  EXPECT_EQ(mluDeviceSynchronizeOn(1), mluSuccess);
}

TEST(Device, ErrorNamesAndStrings) {
  EXPECT_STREQ(mluGetErrorName(mluSuccess), "mluSuccess");
  EXPECT_STREQ(mluGetErrorName(mluErrorLaunchFailure), "mluErrorLaunchFailure");
  for (int e = mluSuccess; e <= mluErrorNotSupported; ++e) {
    EXPECT_GT(std::strlen(mluGetErrorString(static_cast<mluError_t>(e))), 0u);
  }
}

// --- configuration parsing (internal helpers) -------------------------------

TEST(Config, ParseByteSize) {
  using mlu::detail::parse_byte_size;
  EXPECT_EQ(parse_byte_size("123"), 123u);
  EXPECT_EQ(parse_byte_size("64K"), 64u << 10);
  EXPECT_EQ(parse_byte_size("64k"), 64u << 10);
  EXPECT_EQ(parse_byte_size("512M"), size_t{512} << 20);
  EXPECT_EQ(parse_byte_size("8G"), size_t{8} << 30);
  EXPECT_EQ(parse_byte_size("8GB"), size_t{8} << 30);
  EXPECT_EQ(parse_byte_size("8gb"), size_t{8} << 30);
  EXPECT_EQ(parse_byte_size("1T"), size_t{1} << 40);
}

TEST(Config, ParseByteSizeRejectsGarbage) {
  using mlu::detail::parse_byte_size;
  for (const char* text : {"", "garbage", "G", "12X", "8GiB", "8G ", "8 G", "1.5G", "-1", "-1G", " 8G", "+8G",
                           "99999999999999999999", "20000000000G", "16777217T"}) {
    EXPECT_EQ(parse_byte_size(text), 0u) << '"' << text << '"';
  }
}

TEST(Config, ParseVisibleDevices) {
  using mlu::detail::parse_visible_devices;
  using V = std::vector<int>;
  EXPECT_EQ(parse_visible_devices("1,0", 2), (V{1, 0}));
  EXPECT_EQ(parse_visible_devices("0", 2), (V{0}));
  EXPECT_EQ(parse_visible_devices(" 1 , 0 ", 2), (V{1, 0}));
  EXPECT_EQ(parse_visible_devices("0,5,1", 2), (V{0})) << "parsing stops at the first invalid ordinal";
  EXPECT_EQ(parse_visible_devices("", 2), (V{}));
  EXPECT_EQ(parse_visible_devices("1,1,0", 2), (V{1})) << "parsing stops at a duplicate";
  EXPECT_EQ(parse_visible_devices("0,x,1", 2), (V{0}));
  EXPECT_EQ(parse_visible_devices("-1,0", 2), (V{}));
  EXPECT_EQ(parse_visible_devices("0,,1", 2), (V{0}));
  EXPECT_EQ(parse_visible_devices("3,2", 4), (V{3, 2}));
  EXPECT_EQ(parse_visible_devices("0", 0), (V{}));
}

// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(Config, InvalidValuesAreErrorsNamingTheVariable) {
  struct Case {
    const char* name;
    const char* value;
    const char* accepted;
  };
  const Case cases[] = {
      {"TORCH_MLU_DEVICE_MEMORY", "lots", "byte count"},  {"TORCH_MLU_DEVICE_MEMORY", "0", "byte count"},
      {"TORCH_MLU_DEVICE_MEMORY", "-5", "byte count"},    {"TORCH_MLU_DEVICE_MEMORY", "8Q", "byte count"},
      {"TORCH_MLU_DEVICE_COUNT", "two", "integer from 0 to 16"},
      {"TORCH_MLU_DEVICE_COUNT", "17", "integer from 0 to 16"},
      {"TORCH_MLU_DEVICE_CORES", "0", "integer from 1 to 1024"},
      {"TORCH_MLU_DEVICE_CORES", "99999999999999999999", "integer from 1 to 1024"},
  };
  for (const Case& c : cases) {
    ScopedEnv env(c.name, c.value);
    const std::string error = mlu::detail::read_config().error;
    EXPECT_NE(error.find(std::string(c.name) + "='" + c.value + "'"), std::string::npos) << error;
    EXPECT_NE(error.find(c.accepted), std::string::npos) << error;
  }
  ScopedEnv valid("TORCH_MLU_DEVICE_MEMORY", "64M");
  EXPECT_EQ(mlu::detail::read_config().error, "");
  EXPECT_EQ(mlu::detail::read_config().memory_per_device, 64 * kMiB);
  ScopedEnv empty("TORCH_MLU_DEVICE_CORES", "");
  EXPECT_EQ(mlu::detail::read_config().error, "") << "an empty variable means the default";
}

// Note [Ranks of one host share its cores]
TEST(Config, LocalRanksShareTheHostCores) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const int host = CPU_COUNT(&allowed);
  ScopedEnv unset_cores("TORCH_MLU_DEVICE_CORES", "");
  {
    ScopedEnv one_rank("LOCAL_WORLD_SIZE", "");
    EXPECT_EQ(mlu::detail::read_config().cores_per_device, host);
  }
  for (const char* ranks : {"1", "2", "3", "4096"}) {
    ScopedEnv local("LOCAL_WORLD_SIZE", ranks);
    EXPECT_EQ(mlu::detail::read_config().cores_per_device, std::max(1, host / std::atoi(ranks))) << ranks;
  }
  ScopedEnv local("LOCAL_WORLD_SIZE", "2");
  ScopedEnv cores("TORCH_MLU_DEVICE_CORES", "3");
  EXPECT_EQ(mlu::detail::read_config().cores_per_device, 3) << "the explicit setting wins";
}

TEST(Config, MachineConfigReadsEnvironment) {
  const mlu::detail::MachineConfig& config = mlu::detail::machine_config();
  EXPECT_EQ(config.physical_count, 2);
  EXPECT_EQ(config.memory_per_device, 256 * kMiB);
  EXPECT_GT(config.cores_per_device, 0);
}
