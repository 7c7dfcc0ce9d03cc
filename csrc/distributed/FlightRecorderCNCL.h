// FlightRecorderCNCL: the last N collectives of every cncl process group of
// this process, dumped in the format PyTorch's analyser reads
// (python -m torch.distributed.flight_recorder.fr_trace DIR -p PREFIX).
//
// Note [cncl flight recorder]
// NCCL's recorder is a template over its event type whose members torch
// compiles with hidden visibility, and whose definitions need nlohmann/json,
// which the wheel does not ship; so cncl keeps its own ring buffer and writes
// the same pickle (version "2.10": entries, pg_config, pg_status). An entry is
// recorded when the collective is enqueued (with the caller's Python stack),
// marked started and completed by its communication task, so states are exact
// without timing events (NCCL needs TORCH_NCCL_ENABLE_TIMING for "started").
// Profiling names are NCCL's ("nccl:all_reduce", "nccl:send 0->1"): the
// analyser knows collectives by those names only, and each group's
// collective_seq_id counts from 1 identically on every rank (a coalesced group
// shares one, ending with an "nccl:coalesced" entry), as the analyser matches
// ranks on it.
//
// Invariants: one recorder per process, shared by every group; all state under
// one mutex; record() gathers the Python stack before taking it. Ids grow
// without reuse, so a late started()/completed() of an entry the ring has
// overwritten does nothing. Size: TORCH_CNCL_TRACE_BUFFER_SIZE (or
// TORCH_FR_BUFFER_SIZE, TORCH_NCCL_TRACE_BUFFER_SIZE; 2000; 0 turns it off).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch {
struct CapturedTraceback;
}

namespace torch_mlu::distributed {

class FlightRecorderCNCL {
 public:
  static FlightRecorderCNCL& get();

  bool enabled() const { return capacity_ > 0; }

  // A group as the analyser names it: its uid (c10d group name), description
  // and global ranks. Registered at the group's first record.
  struct Group {
    int64_t pg_id;
    std::string name, desc;
    std::vector<int64_t> ranks;
  };

  // The entry's id, or nullopt when the recorder is off.
  std::optional<uint64_t> record(const Group& group, int64_t collective_seq_id, int64_t p2p_seq_id, int64_t op_id,
                                 std::string profiling_name, const std::vector<at::Tensor>& inputs,
                                 const std::vector<at::Tensor>& outputs, std::chrono::milliseconds timeout,
                                 bool is_p2p);
  // From the communication task: the transfer began / ended.
  void started(const std::vector<uint64_t>& ids);
  void completed(const std::vector<uint64_t>& ids);

  // The pickled dump (torch's FlightRecorder::dump format).
  std::string dump(bool include_collectives, bool include_stack_traces, bool only_active);
  // Writes the dump to <prefix><global_rank> and returns that path: the prefix
  // is TORCH_CNCL_DEBUG_INFO_TEMP_FILE (or TORCH_FR_DUMP_TEMP_FILE,
  // TORCH_NCCL_DEBUG_INFO_TEMP_FILE), else ~/.cache/torch/comm_lib_trace_rank_.
  std::string write_dump(int64_t global_rank, bool include_stack_traces = true);

 private:
  FlightRecorderCNCL();

  enum class State { kScheduled, kStarted, kCompleted };
  struct Entry {
    uint64_t id;
    int64_t pg_id;
    int64_t collective_seq_id, p2p_seq_id, op_id;
    std::string profiling_name;
    std::shared_ptr<torch::CapturedTraceback> traceback;
    int64_t time_created_ns;
    std::optional<int64_t> time_started_ns, time_completed_ns;
    int64_t timeout_ms;
    bool is_p2p;
    std::vector<std::vector<int64_t>> input_sizes, output_sizes;
    std::vector<std::string> input_dtypes, output_dtypes;
    State state = State::kScheduled;
    std::string thread_id, thread_name;
  };
  struct GroupStatus {
    Group group;
    int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
  };
  Entry* find(uint64_t id);  // under mutex_

  const size_t capacity_;
  std::mutex mutex_;
  std::vector<Entry> entries_;  // a ring once full
  size_t next_ = 0;             // where the next entry goes once full
  uint64_t next_id_ = 0;
  std::map<int64_t, GroupStatus> groups_;
};

}  // namespace torch_mlu::distributed
