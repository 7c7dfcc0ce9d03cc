// ProcessGroupCNCL: the `cncl` c10d backend of mlu, a transport-agnostic
// device layer over Gloo.
//
// Note [cncl over Gloo]
// The transfers are Gloo's, which ships inside the torch wheel; its headers do
// not, so Python creates the ProcessGroupGloo (on this group's store) and C++
// holds it through the c10d::Backend base class (all_reduce between ranks of
// one host goes through shared memory instead: Note [cncl shared-memory
// all-reduce] in SharedMemoryAllreduce.h). What this class adds is what a
// real accelerator's collective library needs from the framework:
// - Stream order. Each collective is one task on a communication stream of the
//   tensors' device (one stream for collectives, one per peer and direction for
//   point-to-point ops, so that a send and a recv with the same peer never wait
//   behind each other). The stream first waits for the caller's current stream;
//   the task then runs the Gloo op on host aliases of the device memory (zero
//   copy: the software MLU's memory is host-addressable) and waits for it.
//   Tensors stay alive through record_stream (or, under
//   TORCH_CNCL_AVOID_RECORD_STREAMS=1, are held until the transfer has finished:
//   WorkCNCL.h, which also has the Work semantics).
// - Reduce ops Gloo lacks: AVG is SUM then a division, PREMUL_SUM a scaling
//   then SUM; BAND/BOR/BXOR are Gloo's own.
// - Agreement. Before each collective the ranks exchange a fingerprint (op,
//   dtype, size, root, reduce op) so a mismatch is an error naming the op, not a
//   crash inside Gloo (TORCH_CNCL_CHECK_COLLECTIVES=0 skips it).
//
// Note [Agreement ahead of the transfer]
// The fingerprint exchange is a round trip of its own; run before each transfer
// it would double the latency of small collectives. So it goes through a second
// Gloo group (`agreement`), started on the host when the collective is enqueued,
// and the communication task only waits for its answer before the transfer:
// exchanges run ahead of the queued transfers and overlap them. Both groups see
// the collectives in the same (host) order on every rank, which is all Gloo
// needs to pair them; point-to-point ops take no part.
//
// Note [Host-made Gloo works carry no Python state]
// Gloo's works capture the creating thread's ThreadLocalState, Python modes and
// saved-tensor hooks included, and the agreement work is created on the host
// but released by the communication task on a device thread. Releasing a
// Python object there takes the GIL, which the host may hold while it waits for
// that device (a DTensor's .item() inside loss_parallel: the comm queue stopped,
// the compute queue behind it, the host behind both). So the agreement work is
// made under `gil_free_tls_`, the state of a thread that never ran Python.
// - Failure. A transfer that fails (a peer died) or times out (Gloo's timeout is
//   the group's) fails its Work and marks the group broken: every later
//   collective raises at once with the first error. The watchdog
//   (WatchdogCNCL.h) reports it, or a collective still unfinished after the
//   timeout, and applies TORCH_CNCL_ASYNC_ERROR_HANDLING; the flight recorder
//   (FlightRecorderCNCL.h) keeps the group's last collectives.
// - Coalescing (startCoalescing/endCoalescing, batch_isend_irecv): the ops are
//   collected and run as one task that starts every Gloo op before waiting for
//   any.
// All tensors of one rank's group live on one device: the bound device
// (init_process_group(device_id=...)) or the device of its first collective.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ThreadLocalState.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "csrc/core/MLUStream.h"
#include "csrc/distributed/FlightRecorderCNCL.h"
#include "csrc/distributed/SharedMemoryAllreduce.h"
#include "csrc/distributed/WatchdogCNCL.h"
#include "csrc/distributed/WorkCNCL.h"

namespace torch_mlu::distributed {

class ProcessGroupCNCL : public c10d::Backend {
 public:
  // One Gloo op over host aliases, run inside a communication task.
  struct Call {
    const char* name;  // the torch.distributed name, for messages
    // What every rank must agree on: dtype, numel, root, reduce op (-1: may
    // differ). Point-to-point calls have none.
    std::optional<std::array<int64_t, 4>> fingerprint;
    // Issues the transfer: Gloo's Work, or null where the call did it to the
    // end itself (Note [cncl shared-memory all-reduce]).
    std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend& gloo)> start;
    std::function<void()> finish;  // after the transfer, on the host aliases
  };

  // `agreement` (may be null: no agreement checks) is a second Gloo group on
  // the same ranks for Note [Agreement ahead of the transfer]. `store` (may be
  // null) is the group's, for the watchdog's progress keys and dump requests;
  // `global_ranks` are the group's ranks in the default group (empty: 0..size-1).
  ProcessGroupCNCL(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Backend> agreement, int rank,
                   int size, std::chrono::milliseconds timeout, c10::intrusive_ptr<c10d::Store> store = {},
                   std::vector<int64_t> global_ranks = {});
  ~ProcessGroupCNCL() override;

  const std::string getBackendName() const override { return "cncl"; }
  // Note [cncl shared-memory all-reduce]
  bool all_reduce_through_shared_memory() const { return shared_memory_ != nullptr; }
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void setTimeout(std::chrono::milliseconds timeout) override;
  void shutdown() override;
  // Note [Aborting a cncl group]
  // ProcessGroup.abort() (torch.distributed.distributed_c10d._abort_process_group):
  // the group is broken at once, every collective it has not finished fails
  // now with "aborted", the watchdog stops, and shutdown() (destruction) no
  // longer waits for the transfers, so a process recovering from a lost peer
  // can destroy the group and create a new one right away. A transfer still
  // in Gloo ends on its own (at Gloo's timeout) on its group's private queue,
  // holding nothing the new group uses; the Gloo groups are released on a
  // thread of their own, which waits for that.
  void abort() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = {}) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks = false) override;

 private:
  // Which communication stream a call runs on.
  static constexpr int kCollectiveStream = 0;
  static int send_stream(int peer) { return 1 + 2 * peer; }
  static int recv_stream(int peer) { return 2 + 2 * peer; }

  // Checks `tensors` (defined, mlu, dense, one device, the group's device) and
  // returns their device.
  c10::Device check_tensors(const char* op, const std::vector<at::Tensor>& tensors);
  // Validates, then runs `call` (or collects it while coalescing).
  c10::intrusive_ptr<c10d::Work> run(Call call, c10d::OpType op_type, std::vector<at::Tensor> inputs,
                                     std::vector<at::Tensor> outputs, int stream_key);
  c10::intrusive_ptr<c10d::Work> launch(std::vector<Call> calls, std::shared_ptr<CommSignal> signal,
                                        c10d::OpType op_type, const char* name, c10::Device device,
                                        std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs,
                                        int stream_key);
  MLUStream comm_stream(int key, c10::DeviceIndex device);
  void throw_if_broken() const;
  // Records the launch in the flight recorder and hands it to the watchdog;
  // returns the recorder's ids of its entries.
  std::vector<uint64_t> trace_launch(const std::vector<Call>& calls, const std::shared_ptr<CommSignal>& signal,
                                     c10d::OpType op_type, const std::vector<at::Tensor>& inputs,
                                     const std::vector<at::Tensor>& outputs, int stream_key);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  c10::intrusive_ptr<c10d::Backend> agreement_;
  // Ranks all on this host: all_reduce through shared memory (null: Gloo's).
  std::shared_ptr<SharedMemoryAllreduce> shared_memory_;
  std::optional<at::ThreadLocalState> gil_free_tls_;  // Note [Host-made Gloo works carry no Python state]
  std::chrono::milliseconds timeout_;
  // Set by a failed transfer (from a device thread); read by every later call.
  struct Failure {
    std::mutex mutex;
    std::string message;
  };
  std::shared_ptr<Failure> failure_ = std::make_shared<Failure>();
  std::shared_ptr<CompletionQueue> completion_ = std::make_shared<CompletionQueue>();
  std::shared_ptr<StreamCoverage> coverage_ = std::make_shared<StreamCoverage>();
  const int64_t pg_id_;  // this process's count of cncl groups, for the flight recorder
  std::vector<int64_t> global_ranks_;
  int64_t collective_seq_ = 0, p2p_seq_ = 0, op_id_ = 0;  // Note [cncl flight recorder]
  std::unique_ptr<WatchdogCNCL> watchdog_;
  std::atomic<bool> aborted_{false};

  std::mutex streams_mutex_;
  std::map<std::pair<c10::DeviceIndex, int>, MLUStream> streams_;
  std::optional<c10::DeviceIndex> device_;  // the group's device on this rank, once known

  struct Pending {
    Call call;
    std::vector<at::Tensor> inputs, outputs;
  };
  bool coalescing_ = false;
  std::shared_ptr<CommSignal> coalesced_signal_;  // shared by the Works of the group being collected
  std::vector<Pending> pending_;
  std::optional<c10::Device> coalesced_device_;
  c10d::OpType coalesced_op_ = c10d::OpType::COALESCED;
};

}  // namespace torch_mlu::distributed
