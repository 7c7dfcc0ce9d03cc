// WatchdogCNCL: the host threads that watch one cncl process group's
// collectives, as ProcessGroupNCCL's watchdog and heartbeat monitor do.
//
// Note [cncl watchdog]
// Every collective the group enqueues is watched from then on. A collective
// that has not finished within the group's timeout of being enqueued (the
// clock NCCL's watchdog uses), or whose transfer failed (a peer died), is
// handled once per group:
// - one log line naming it as NCCL does ("[Rank 0] Watchdog caught collective
//   operation timeout: WorkCNCL(SeqNum=3, OpType=ALLREDUCE, ...) ran for 4012
//   milliseconds before timing out."), with the group's ranks that had not
//   entered it and those that had, from the progress every rank publishes in
//   the group's store (below); with TORCH_CNCL_DESYNC_DEBUG=1 also NCCL's
//   desync report (c10d::retrieveDesyncReport, from the same keys);
// - the flight recorder written on every rank (Note [cncl flight recorder]):
//   this rank sets `cncl_dump_signal` in the store, every rank's watchdog polls
//   it each second, writes its dump and acknowledges, and this rank waits for
//   the acknowledgements (at most TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC) before
//   going on; off with TORCH_CNCL_DUMP_ON_TIMEOUT=0 or an empty recorder;
// - then TORCH_CNCL_ASYNC_ERROR_HANDLING, NCCL's modes and default: 1
//   (TearDown) and 3 (SkipCleanUp) end the process (SIGABRT, after the log and
//   the dump); 0 and 2 fail the collective's Work with that message and break
//   the group, so every later call raises it.
// A collective the ranks disagree on (Note [Agreement ahead of the transfer])
// is an error of the call, not of the group: it is raised and never handled
// here. Progress is published as NCCL's desync debugger keeps it
// (`CNCL_<rank>_trace_start` / `_trace_end`: the sequence number and op of the
// last collective started / finished), by the watchdog at most once per tick
// (100 ms) and only when it changed, so the transfers never wait on the store.
// The heartbeat monitor ends the process (TORCH_CNCL_ENABLE_MONITORING, on by
// default) when the watchdog itself has made no progress for
// TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC (a store that stopped answering).
//
// Invariants: the threads start with the group's first collective and are
// joined by stop() (the group's shutdown); they never hold the GIL while
// waiting, and touch a collective only through its CommSignal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "csrc/distributed/WorkCNCL.h"

namespace torch_mlu::distributed {

class WatchdogCNCL {
 public:
  using Clock = std::chrono::steady_clock;

  struct Group {
    int rank, size;
    int64_t global_rank;
    c10::intrusive_ptr<c10d::Store> store;  // the group's own (prefixed) store; may be null
  };
  // One collective, as enqueued.
  struct Watched {
    std::shared_ptr<CommSignal> signal;
    int64_t seq;  // the group's collective sequence number (from 1); p2p ops: the last one's
    bool is_p2p;
    std::string op;       // its name for the progress keys ("ALLREDUCE")
    std::string summary;  // "WorkCNCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=4000)"
    Clock::time_point enqueued;
    std::chrono::milliseconds timeout;
  };

  // `break_group` marks the group broken with a message (from the watchdog thread).
  WatchdogCNCL(Group group, std::function<void(const std::string&)> break_group);
  ~WatchdogCNCL();

  void watch(Watched watched);
  void stop();
  // Stops, then fails every watched collective that has not finished (Note [Aborting a cncl group]).
  void abort(std::exception_ptr error, const std::string& message);

 private:
  void run();
  void monitor();
  void check_works();
  void handle(const Watched& watched, bool timed_out);
  void publish_progress();
  std::string peers_report(int64_t seq, const std::string& op);
  void poll_dump_signal();
  void dump_everywhere();
  void write_dump(const char* why);

  const Group group_;
  const std::function<void(const std::string&)> break_group_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Watched> watched_;
  bool stopping_ = false;
  bool handled_ = false;  // a failure of this group was handled already
  std::thread thread_, monitor_thread_;
  std::atomic<uint64_t> heartbeat_{0};

  // Progress (watchdog thread only): the last collective started / finished, and what was published.
  int64_t started_seq_ = 0, completed_seq_ = 0;
  std::string started_op_, completed_op_;
  int64_t published_started_ = 0, published_completed_ = 0;
  Clock::time_point next_dump_poll_;
};

}  // namespace torch_mlu::distributed
