// CNCLConfig: the TORCH_CNCL_* settings of the cncl process-group backend,
// read once from the environment. Each also accepts its TORCH_NCCL_* name
// (and NCCL_* where PyTorch still reads one), as Cambricon's torch_mlu does,
// so a script tuned for NCCL keeps its meaning on mlu.
#pragma once

namespace torch_mlu::distributed {

struct CNCLConfig {
  // Work.wait() blocks the host until the collective finished (and raises its
  // error there) instead of only making the current stream wait.
  bool blocking_wait = false;
  // Keep the tensors of a collective alive in its Work instead of telling the
  // caching allocator that the communication stream uses them.
  bool avoid_record_streams = false;
  // 1 or 3: a failed or timed-out collective terminates the process (NCCL's
  // TearDown); 0 or 2: it is raised as a Python exception (the default).
  int async_error_handling = 0;
  // Exchange a fingerprint (op, dtype, size, root, reduce op) before each
  // collective, so a mismatch across ranks is an error naming the op instead
  // of a crash inside Gloo. On unless TORCH_CNCL_CHECK_COLLECTIVES=0.
  bool check_collectives = true;
  // 0 quiet; 1 (INFO/DETAIL via TORCH_CNCL_DEBUG or NCCL_DEBUG) logs each
  // process group's creation and every failure.
  int debug = 0;
};

const CNCLConfig& cncl_config();

}  // namespace torch_mlu::distributed
