// WorkCNCL: the handle of one collective (or one coalesced group of them) of
// the cncl backend, and the two small objects it shares.
//
// A collective runs as one task on a communication stream (ProcessGroupCNCL.h).
// - CommSignal is all the task touches: it is finished exactly once, with or
//   without an error, when the transfer is over. It holds no tensor, because a
//   task's captures are destroyed on a device thread, and freeing device memory
//   there would launch onto queues from inside a queue.
// - WorkCNCL is the caller's handle. Work.wait() makes the current stream wait
//   for the transfer and never blocks the host, unless TORCH_CNCL_BLOCKING_WAIT
//   is set, an explicit timeout is given, or the op is a barrier; a failed
//   transfer fails the waiting stream's task, so the error surfaces at that
//   stream's next synchronization (Note [Errors belong to queues]).
// - The future of getFuture() lives on mlu (a device-aware ivalue::Future) and
//   is completed, with the outputs or the error, by the process group's
//   CompletionQueue thread once the transfer has finished; DDP's comm hooks
//   and their then() callbacks run there, never on a device thread.
// - Under TORCH_CNCL_AVOID_RECORD_STREAMS=1 the CompletionQueue also holds the
//   transfer's tensors until it has finished, whether or not anyone keeps the
//   Work (as NCCL's watchdog does).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <mlu_runtime/queue.h>

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace torch_mlu::distributed {

class CompletionQueue;

struct CommSignal {
  explicit CommSignal(std::shared_ptr<CompletionQueue> completion) : completion(std::move(completion)) {}
  // The first call wins: the communication task's, or the watchdog's for a
  // collective past its timeout (Note [cncl watchdog]). `breaks_group`: the
  // failure is the group's (a transfer), not the call's (a disagreement).
  void finish(std::exception_ptr failure, std::string failure_message, int source = -1, bool breaks_group = false);
  // Waits up to `timeout` for finish(); returns whether it happened.
  bool wait_for(std::chrono::milliseconds timeout);
  bool is_done();

  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::string error_message;
  int source_rank = -1;
  bool breaks_group = false;
  std::atomic<bool> started{false};  // the communication task began
  // A transfer failure the task leaves to the watchdog instead of finishing
  // (TORCH_CNCL_ASYNC_ERROR_HANDLING 1 and 3: the watchdog ends the process,
  // so no waiter may see the error first); `error_message` says what it was.
  std::atomic<bool> failure_pending{false};
  std::shared_ptr<CompletionQueue> completion;
};

// Note [Skipping a redundant stream wait]
// A collective's communication stream first waits for the caller's current
// stream. In a loop of blocking collectives the only work launched there since
// the previous collective is that collective's wait task, which itself waits for
// the communication stream: waiting for it again would bounce between the two
// device threads once per op. StreamCoverage remembers, per current queue, the
// launch count up to which every task is either already waited for by the
// group's collective stream or a wait task for one of its collectives; a
// collective whose current queue has launched nothing beyond that skips the
// wait. Launches by other threads only make it wait (counts are compared exactly).
class StreamCoverage {
 public:
  // Before a collective on the collective stream: whether it must wait for
  // `queue`; if so, the caller waits now and everything launched so far counts
  // as covered.
  bool needs_wait(mlu::mluQueue_t queue);
  // After a wait task for one of the group's collectives was launched on
  // `queue`, with the queue's launch count before and after.
  void wait_task_launched(mlu::mluQueue_t queue, uint64_t before, uint64_t after);

 private:
  std::mutex mutex_;
  std::unordered_map<mlu::mluQueue_t, uint64_t> covered_;
};

class WorkCNCL : public c10d::Work {
 public:
  // `coverage`: the group's, when the transfer runs on its collective stream
  // (Note [Skipping a redundant stream wait]); null otherwise.
  WorkCNCL(std::shared_ptr<CommSignal> signal, int rank, c10d::OpType op_type, const char* op_name,
           c10::Device device, std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout,
           std::shared_ptr<StreamCoverage> coverage = nullptr);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Completes the future with the outputs or the error; the transfer is over.
  void complete_future();

 private:
  // Enqueues on the current stream a task that waits for the transfer and
  // fails if it failed.
  void make_current_stream_wait();
  void wait_on_host(std::chrono::milliseconds timeout);

  std::shared_ptr<CommSignal> signal_;
  const char* op_name_;
  c10::Device device_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<StreamCoverage> coverage_;
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool future_completed_ = false;

  friend class CompletionQueue;
};

// Completes the futures of finished transfers, and drops the tensors held for
// them, on one host thread per process group (started on first use).
class CompletionQueue {
 public:
  CompletionQueue() = default;
  ~CompletionQueue();
  void add(c10::intrusive_ptr<WorkCNCL> work);
  void hold(std::shared_ptr<CommSignal> signal, std::vector<at::Tensor> tensors);
  void notify();  // a transfer finished (called from a device thread)
  void stop();    // completes what is finished, drops the rest, joins

 private:
  struct Entry {
    std::shared_ptr<CommSignal> signal;
    c10::intrusive_ptr<WorkCNCL> work;  // whose future to complete, or null
    std::vector<at::Tensor> held;
  };
  void push(Entry entry);
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace torch_mlu::distributed
