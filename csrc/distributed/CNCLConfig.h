// CNCLConfig: the TORCH_CNCL_* settings of the cncl process-group backend,
// read once from the environment. Each also accepts its TORCH_NCCL_* name
// (and NCCL_* where PyTorch still reads one), as Cambricon's torch_mlu does,
// so a script tuned for NCCL keeps its meaning on mlu.
#pragma once

#include <chrono>

namespace torch_mlu::distributed {

struct CNCLConfig {
  // Work.wait() blocks the host until the collective finished (and raises its
  // error there) instead of only making the current stream wait.
  bool blocking_wait = false;
  // Keep the tensors of a collective alive in its Work instead of telling the
  // caching allocator that the communication stream uses them.
  bool avoid_record_streams = false;
  // What the watchdog does with a failed or timed-out collective (Note [cncl
  // watchdog]), NCCL's modes and default: 1 (TearDown) or 3 (SkipCleanUp, the
  // default) terminate the process after the report and the dump; 0 or 2 fail
  // its Work with the report (a Python exception) and break the group.
  int async_error_handling = 3;
  // Exchange a fingerprint (op, dtype, size, root, reduce op) before each
  // collective, so a mismatch across ranks is an error naming the op instead
  // of a crash inside Gloo. On unless TORCH_CNCL_CHECK_COLLECTIVES=0.
  bool check_collectives = true;
  // 0 quiet; 1 (INFO/DETAIL via TORCH_CNCL_DEBUG or NCCL_DEBUG) logs each
  // process group's creation and every failure.
  int debug = 0;
  // The flight recorder (Note [cncl flight recorder]): entries kept, 0 = off.
  int trace_buffer_size = 2000;
  // On a timeout or failure, every rank writes its flight recorder dump.
  bool dump_on_timeout = true;
  // How long the failing rank waits for the others' dumps before going on.
  int wait_timeout_dump_ms = 15000;
  // Timeout reports add NCCL's desync report (which ranks joined what).
  bool desync_debug = false;
  // The heartbeat monitor ends a process whose watchdog is stuck this long.
  bool enable_monitoring = true;
  int heartbeat_timeout_sec = 480;
  // Ranks of one host all-reduce through Gloo, not shared memory (Note [cncl
  // shared-memory all-reduce]).
  bool shm_disable = false;
};

// How much longer than the group's timeout a transfer waits for its peers
// before failing on its own: the watchdog, which acts at the timeout, reports
// first (Note [cncl watchdog]). Gloo's timeout is set to the same.
constexpr std::chrono::seconds kTransferTimeoutMargin{10};

const CNCLConfig& cncl_config();

}  // namespace torch_mlu::distributed
