#include "csrc/distributed/CNCLConfig.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace torch_mlu::distributed {
namespace {

// The first of `names` that is set, or nullptr.
const char* first_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  return nullptr;
}

int int_setting(std::initializer_list<const char*> names, int fallback) {
  const char* value = first_set(names);
  if (value == nullptr) return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (end != value && *end == '\0') ? static_cast<int>(parsed) : fallback;
}

int debug_level() {
  const char* value = first_set({"TORCH_CNCL_DEBUG", "CNCL_DEBUG", "NCCL_DEBUG"});
  if (value == nullptr) return 0;
  const std::string level(value);
  return (level == "INFO" || level == "DETAIL" || level == "TRACE" || level == "1") ? 1 : 0;
}

CNCLConfig read_config() {
  CNCLConfig config;
  config.blocking_wait =
      int_setting({"TORCH_CNCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"}, 0) != 0;
  config.avoid_record_streams =
      int_setting({"TORCH_CNCL_AVOID_RECORD_STREAMS", "TORCH_NCCL_AVOID_RECORD_STREAMS"}, 0) != 0;
  config.async_error_handling = int_setting(
      {"TORCH_CNCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}, 3);
  config.check_collectives = int_setting({"TORCH_CNCL_CHECK_COLLECTIVES"}, 1) != 0;
  config.debug = debug_level();
  config.trace_buffer_size = std::max(
      0, int_setting({"TORCH_CNCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}, 2000));
  config.dump_on_timeout = int_setting({"TORCH_CNCL_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT"}, 1) != 0;
  config.wait_timeout_dump_ms =
      int_setting({"TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC", "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC"}, 15000);
  config.desync_debug =
      int_setting({"TORCH_CNCL_DESYNC_DEBUG", "TORCH_NCCL_DESYNC_DEBUG", "NCCL_DESYNC_DEBUG"}, 0) != 0;
  config.enable_monitoring = int_setting({"TORCH_CNCL_ENABLE_MONITORING", "TORCH_NCCL_ENABLE_MONITORING"}, 1) != 0;
  config.heartbeat_timeout_sec =
      std::max(1, int_setting({"TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"}, 480));
  config.shm_disable = int_setting({"CNCL_SHM_DISABLE", "NCCL_SHM_DISABLE"}, 0) != 0;
  return config;
}

}  // namespace

const CNCLConfig& cncl_config() {
  static const CNCLConfig config = read_config();
  return config;
}

}  // namespace torch_mlu::distributed
