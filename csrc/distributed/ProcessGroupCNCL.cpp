// The device layer of the cncl backend: checks, communication streams, the
// communication task, agreement checks, coalescing. The ops themselves (which
// Gloo call each one makes) are in ProcessGroupCNCLOps.cpp.
#include "csrc/distributed/ProcessGroupCNCL.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <mlu_runtime/queue.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"
#include "csrc/distributed/CNCLConfig.h"
#include "csrc/graphs/MLUGraph.h"

namespace torch_mlu::distributed {
namespace {

// A collective the ranks disagree on: raised on every rank, the group stays usable.
struct MismatchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int kFingerprintWords = 7;  // calls, hash of all, then the first call: name, dtype, numel, root, op

const std::vector<std::string>& call_names() {
  static const std::vector<std::string> names = {
      "broadcast",     "all_reduce",     "reduce",       "all_gather",   "all_gather_into_tensor",
      "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
      "scatter",       "barrier"};
  return names;
}

int64_t name_code(const char* name) {
  const auto& names = call_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string describe(const int64_t* row) {
  const auto& names = call_names();
  std::string text = (row[2] >= 0 && row[2] < static_cast<int64_t>(names.size())) ? names[row[2]] : "?";
  text += "(";
  if (row[3] >= 0) text += c10::str("dtype=", c10::toString(static_cast<c10::ScalarType>(row[3])));
  if (row[4] >= 0) text += c10::str(", numel=", row[4]);
  if (row[5] >= 0) text += c10::str(", root=", row[5]);
  static const char* const kReduceOps[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  if (row[6] >= 0 && row[6] < 9) text += c10::str(", op=", kReduceOps[row[6]]);
  text += ")";
  if (row[0] > 1) text += c10::str(" and ", row[0] - 1, " more coalesced");
  return text;
}

// The calls' fingerprint (what every rank must agree on), or an undefined
// tensor when none of them is a collective.
at::Tensor fingerprint_of(const std::vector<ProcessGroupCNCL::Call>& calls) {
  std::vector<const ProcessGroupCNCL::Call*> collectives;
  for (const auto& call : calls) {
    if (call.fingerprint) collectives.push_back(&call);
  }
  if (collectives.empty()) return {};
  at::Tensor mine = at::empty({kFingerprintWords}, at::TensorOptions().dtype(at::kLong));
  int64_t* m = mine.data_ptr<int64_t>();
  size_t hash = 0;
  for (const auto* call : collectives) {
    hash = hash * 1000003u ^ static_cast<size_t>(name_code(call->name));
    for (int64_t v : *call->fingerprint) hash = hash * 1000003u ^ static_cast<size_t>(v);
  }
  m[0] = static_cast<int64_t>(collectives.size());
  m[1] = static_cast<int64_t>(hash & 0x7fffffffffffffffULL);
  m[2] = name_code(collectives[0]->name);
  for (int i = 0; i < 4; ++i) m[3 + i] = (*collectives[0]->fingerprint)[i];
  return mine;
}

// Throws MismatchError unless every rank's row of `all` equals `mine`.
void verify_agreement(const at::Tensor& mine, const at::Tensor& all, int rank, int size) {
  const int64_t* m = mine.data_ptr<int64_t>();
  const int64_t* rows = all.data_ptr<int64_t>();
  for (int r = 0; r < size; ++r) {
    if (std::equal(m, m + kFingerprintWords, rows + r * kFingerprintWords)) continue;
    throw MismatchError(c10::str(
        "collectives differ across ranks: rank ", rank, " called ", describe(m), " while rank ", r, " called ",
        describe(rows + r * kFingerprintWords),
        ". Every rank must call the same collectives in the same order, with tensors of the same dtype and size "
        "(and the same root and reduce op)."));
  }
}

// One write per line, so the lines of several ranks sharing a terminal do not interleave.
void log_line(const std::string& text) {
  const std::string line = "[cncl] " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::string message_of(const std::exception& e) {
  if (const auto* error = dynamic_cast<const c10::Error*>(&e)) return error->what_without_backtrace();
  return e.what();
}

std::exception_ptr dist_backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

// Note [A collective task that never ran]
// A collective's device task finishes its signal (and so every waiter: the
// stream's wait task, Work.wait) on every path through its body. A task that
// is destroyed without running (Note [Fault injection] in mlu_runtime/fault.h
// fails a task by not running it) would leave them waiting until the timeout;
// this guard, captured by the task, finishes the signal with an error and
// breaks the group instead, as the body does when the transfer fails.
// (A template over the group's private Failure record, deduced at the capture.)
template <class Failure>
class FinishUnlessRun {
 public:
  FinishUnlessRun(std::shared_ptr<CommSignal> signal, std::shared_ptr<Failure> failure, std::string message)
      : signal_(std::move(signal)), failure_(std::move(failure)), message_(std::move(message)) {}
  FinishUnlessRun(FinishUnlessRun&& other) noexcept = default;
  FinishUnlessRun(const FinishUnlessRun&) = delete;
  ~FinishUnlessRun() {
    if (!signal_ || signal_->started.load() || signal_->is_done()) return;  // moved from, or the body ran
    {
      std::lock_guard<std::mutex> lock(failure_->mutex);
      if (failure_->message.empty()) failure_->message = message_;
    }
    signal_->finish(dist_backend_error(message_), message_);
  }

 private:
  std::shared_ptr<CommSignal> signal_;
  std::shared_ptr<Failure> failure_;
  std::string message_;
};

// NCCL's profiling name of a launch (Note [cncl flight recorder]): the analyser
// knows collectives by these only.
std::string profiling_name(c10d::OpType op_type, const char* call_name, int rank, int peer) {
  using c10d::OpType;
  switch (op_type) {
    case OpType::BROADCAST:
      return "nccl:broadcast";
    case OpType::ALLREDUCE:
      return "nccl:all_reduce";
    case OpType::ALLREDUCE_COALESCED:
      return "nccl:allreduce_coalesced";
    case OpType::REDUCE:
      return "nccl:reduce";
    case OpType::ALLGATHER:
      return "nccl:all_gather";
    case OpType::_ALLGATHER_BASE:
      return "nccl:_all_gather_base";
    case OpType::ALLGATHER_COALESCED:
      return "nccl:ALLGATHER_coalesced";
    case OpType::GATHER:
      return "nccl:gather";
    case OpType::SCATTER:
      return "nccl:scatter";
    case OpType::REDUCE_SCATTER:
      return "nccl:reduce_scatter";
    case OpType::_REDUCE_SCATTER_BASE:
      return "nccl:_reduce_scatter_base";
    case OpType::REDUCE_SCATTER_TENSOR_COALESCED:
      return "nccl:reduce_scatter_tensor_coalesced";
    case OpType::ALLTOALL_BASE:
    case OpType::ALLTOALL:
      return "nccl:all_to_all";
    case OpType::BARRIER:
      return "nccl:all_reduce_barrier";
    case OpType::SEND:
      return c10::str("nccl:send ", rank, "->", peer);
    case OpType::RECV:
      return c10::str("nccl:recv ", rank, "<-", peer);
    case OpType::RECVANYSOURCE:
      return c10::str("nccl:recv ", rank, "<-any");
    default:
      return std::string(call_name) == "all_gather_into_tensor" ? "nccl:all_gather_into_tensor_coalesced"
                                                                : "nccl:coalesced";
  }
}

int64_t total_numel(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

std::atomic<int64_t> next_pg_id{0};

bool dtype_supported(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16:
    case at::kChar: case at::kByte: case at::kInt: case at::kLong: case at::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace

ProcessGroupCNCL::ProcessGroupCNCL(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Backend> agreement,
                                   int rank, int size, std::chrono::milliseconds timeout,
                                   c10::intrusive_ptr<c10d::Store> store, std::vector<int64_t> global_ranks)
    : c10d::Backend(rank, size),
      gloo_(std::move(gloo)),
      agreement_(std::move(agreement)),
      timeout_(timeout),
      pg_id_(next_pg_id++),
      global_ranks_(std::move(global_ranks)) {
  TORCH_CHECK(gloo_, "ProcessGroupCNCL needs a Gloo process group to carry its transfers");
  if (global_ranks_.empty()) {
    for (int r = 0; r < size; ++r) global_ranks_.push_back(r);
  }
  TORCH_CHECK_VALUE(static_cast<int>(global_ranks_.size()) == size, "ProcessGroupCNCL: ", global_ranks_.size(),
                    " global ranks for a group of ", size);
  if (store) shared_memory_ = SharedMemoryAllreduce::connect(*store, rank, size);
  watchdog_ = std::make_unique<WatchdogCNCL>(WatchdogCNCL::Group{rank, size, global_ranks_[rank], std::move(store)},
                                             [failure = failure_](const std::string& message) {
                                               std::lock_guard<std::mutex> lock(failure->mutex);
                                               if (failure->message.empty()) failure->message = message;
                                             });
  if (agreement_) {
    std::thread([this] { gil_free_tls_.emplace(); }).join();  // Note [Host-made Gloo works carry no Python state]
  }
  if (cncl_config().debug) {
    log_line(c10::str("rank ", rank, "/", size, ": process group over Gloo",
                      shared_memory_ ? " (all_reduce through shared memory)" : "", ", timeout ", timeout.count(),
                      " ms"));
  }
}

ProcessGroupCNCL::~ProcessGroupCNCL() { shutdown(); }

void ProcessGroupCNCL::shutdown() {
  // Finish the transfers in flight (each ends within Gloo's timeout) before the
  // futures' thread goes. The streams themselves live on: the caching allocator
  // may still record events on them for tensors freed later.
  std::vector<MLUStream> streams;
  if (!aborted_) {  // Note [Aborting a cncl group]
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (const auto& [key, stream] : streams_) streams.push_back(stream);
  }
  for (const auto& stream : streams) {
    try {
      stream.synchronize();
    } catch (const std::exception&) {
      // Its Works already carry the error.
    }
  }
  watchdog_->stop();  // after the transfers: a stuck one is still reported
  completion_->stop();
  if (aborted_ && (gloo_ || agreement_)) {
    // Note [Aborting a cncl group]: a Gloo group joins its worker threads when destroyed, and a transfer (or
    // agreement exchange) stuck with a lost peer holds one until Gloo's timeout; let another thread wait for that.
    std::thread([gloo = std::move(gloo_), agreement = std::move(agreement_)]() mutable {
      agreement.reset();
      gloo.reset();
    }).detach();
  }
}

void ProcessGroupCNCL::abort() {
  const std::string message = c10::str("cncl process group (rank ", getRank(), ") was aborted (ProcessGroup.abort())");
  {
    std::lock_guard<std::mutex> lock(failure_->mutex);
    if (failure_->message.empty()) failure_->message = message;
  }
  aborted_ = true;
  if (shared_memory_) shared_memory_->abort();
  watchdog_->abort(dist_backend_error(message), message);
}

void ProcessGroupCNCL::setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

void ProcessGroupCNCL::setSequenceNumberForGroup() { gloo_->setSequenceNumberForGroup(); }

uint64_t ProcessGroupCNCL::getSequenceNumberForGroup() { return gloo_->getSequenceNumberForGroup(); }

void ProcessGroupCNCL::throw_if_broken() const {
  std::lock_guard<std::mutex> lock(failure_->mutex);
  if (!failure_->message.empty()) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("cncl process group (rank ", getRank(), ") is broken by an earlier failure: ",
                             failure_->message, ". Destroy it (destroy_process_group) and start over."));
  }
}

c10::Device ProcessGroupCNCL::check_tensors(const char* op, const std::vector<at::Tensor>& tensors) {
  std::optional<c10::Device> device;
  for (const auto& t : tensors) {
    TORCH_CHECK_VALUE(t.defined(), "cncl ", op, ": got an undefined tensor");
    TORCH_CHECK_VALUE(t.device().type() == c10::DeviceType::PrivateUse1, "cncl ", op,
                      ": expected mlu tensors, got a tensor on ", t.device(),
                      ". cncl moves mlu tensors only; for CPU tensors use a group with backend "
                      "'cpu:gloo,mlu:cncl' (what init_process_group() picks by default) or 'gloo'.");
    TORCH_CHECK_VALUE(t.layout() == c10::kStrided, "cncl ", op, ": expected dense tensors, got layout ", t.layout());
    TORCH_CHECK_VALUE(t.is_non_overlapping_and_dense(), "cncl ", op,
                      ": Tensors must be contiguous (got sizes ", t.sizes(), ", strides ", t.strides(),
                      "); call .contiguous() first.");
    TORCH_CHECK_VALUE(dtype_supported(t.scalar_type()), "cncl ", op, ": dtype ", t.scalar_type(),
                      " is not supported; cncl carries float32, float64, float16, bfloat16, int8, uint8, int32, "
                      "int64 and bool (complex tensors go through torch.view_as_real).");
    if (!device) {
      device = t.device();
    } else {
      TORCH_CHECK_VALUE(*device == t.device(), "cncl ", op, ": got tensors on ", *device, " and on ", t.device(),
                        "; all tensors of one collective must be on the same mlu device.");
    }
  }
  if (!device) return c10::Device(c10::DeviceType::PrivateUse1, current_device());
  if (!device_) {
    const auto bound = getBoundDeviceId();
    device_ = bound ? bound->index() : device->index();
  }
  TORCH_CHECK_VALUE(device->index() == *device_, "cncl ", op, ": tensor on ", *device, ", but rank ", getRank(),
                    " of this process group communicates from mlu:", static_cast<int>(*device_),
                    " (its bound device_id or the device of its first collective). Keep each rank's tensors on "
                    "one device: call torch.mlu.set_device(local_rank) before creating them.");
  return *device;
}

MLUStream ProcessGroupCNCL::comm_stream(int key, c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  auto it = streams_.find({device, key});
  if (it != streams_.end()) return it->second;
  // A queue of its own, not one of the pools: a communication task blocks its
  // queue until the peers answer, which must not stall a user's stream.
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
  int least = 0, greatest = 0;
  MLU_CHECK(mlu::mluDeviceGetQueuePriorityRange(&least, &greatest));
  mlu::mluQueue_t queue = nullptr;
  MLU_CHECK(mlu::mluQueueCreateWithPriority(&queue, greatest));
  MLUStream stream = getStreamFromExternal(queue, device);
  streams_.emplace(std::make_pair(device, key), stream);
  return stream;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::run(Call call, c10d::OpType op_type,
                                                     std::vector<at::Tensor> inputs,
                                                     std::vector<at::Tensor> outputs, int stream_key) {
  throw_if_broken();
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const c10::Device device = check_tensors(call.name, all);
  if (coalescing_) {
    if (!coalesced_device_) coalesced_device_ = device;
    TORCH_CHECK_VALUE(*coalesced_device_ == device, "cncl ", call.name, ": coalesced ops on ", *coalesced_device_,
                      " and ", device, "; one coalesced group uses one device.");
    const char* name = call.name;
    pending_.push_back(Pending{std::move(call), inputs, outputs});
    return c10::make_intrusive<WorkCNCL>(coalesced_signal_, getRank(), op_type, name, device, std::move(outputs),
                                         timeout_);
  }
  const char* name = call.name;
  std::vector<Call> calls;
  calls.push_back(std::move(call));
  return launch(std::move(calls), std::make_shared<CommSignal>(completion_), op_type, name, device,
                std::move(inputs), std::move(outputs), stream_key);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::launch(std::vector<Call> calls, std::shared_ptr<CommSignal> signal,
                                                        c10d::OpType op_type, const char* name, c10::Device device,
                                                        std::vector<at::Tensor> inputs,
                                                        std::vector<at::Tensor> outputs, int stream_key) {
  // A collective runs once, with its peers, when launched: it cannot be recorded and replayed.
  refuse_in_capture(device.index(), std::string("the cncl collective ") + name);
  const MLUStream current = getCurrentMLUStream(device.index());
  const MLUStream comm = comm_stream(stream_key, device.index());
  // See Note [Skipping a redundant stream wait] in WorkCNCL.h. Not for external
  // streams: their queues can be destroyed, and a new queue at the same address
  // would inherit the old one's count.
  const bool collective_stream = stream_key == kCollectiveStream;
  const bool tracked = collective_stream && current.id() < kExternalStreamBase;
  if (!tracked || coverage_->needs_wait(current.queue())) stream_wait_stream(comm, current);
  const CNCLConfig& config = cncl_config();
  if (config.avoid_record_streams) {
    std::vector<at::Tensor> stash = inputs;
    stash.insert(stash.end(), outputs.begin(), outputs.end());
    completion_->hold(signal, std::move(stash));
  } else {
    c10::DeviceAllocator* allocator = getMLUDeviceAllocator();
    for (const auto* list : {&inputs, &outputs}) {
      for (const auto& t : *list) {
        if (t.storage().data_ptr().get() != nullptr) allocator->recordStream(t.storage().data_ptr(), comm);
      }
    }
  }
  const int rank = getRank();
  const int size = getSize();
  std::vector<uint64_t> trace_ids = trace_launch(calls, signal, op_type, inputs, outputs, stream_key);
  // See Note [Agreement ahead of the transfer] in ProcessGroupCNCL.h.
  at::Tensor fingerprint = agreement_ ? fingerprint_of(calls) : at::Tensor();
  at::Tensor fingerprints;
  c10::intrusive_ptr<c10d::Work> agreement;
  if (fingerprint.defined()) {
    fingerprints = at::empty({size * kFingerprintWords}, fingerprint.options());
    at::ThreadLocalStateGuard no_python_state(*gil_free_tls_);
    agreement = agreement_->_allgather_base(fingerprints, fingerprint);
  }
  MLU_CHECK(mlu::mluLaunchTask(
      comm.queue(), "cncl collective",
      [calls = std::move(calls), gloo = gloo_, signal, failure = failure_, rank, size, name, fingerprint, fingerprints,
       agreement, trace_ids = std::move(trace_ids),
       unless_run = FinishUnlessRun(signal, failure_,
                                    c10::str("cncl ", name, " failed on rank ", rank,
                                             ": its device task did not run (a fault injected into it)"))]() {
        signal->started = true;
        auto& recorder = FlightRecorderCNCL::get();
        recorder.started(trace_ids);
        std::string message;
        bool mismatch = false;
        try {
          {
            std::lock_guard<std::mutex> lock(failure->mutex);
            if (!failure->message.empty()) throw std::runtime_error("the group is broken: " + failure->message);
          }
          if (agreement) {
            agreement->wait();
            verify_agreement(fingerprint, fingerprints, rank, size);
          }
          std::vector<c10::intrusive_ptr<c10d::Work>> works;
          works.reserve(calls.size());
          for (const auto& call : calls) works.push_back(call.start(*gloo));
          for (const auto& work : works) {
            if (work) work->wait();
          }
          for (const auto& call : calls) {
            if (call.finish) call.finish();
          }
          const int source =
              (works.size() == 1 && works[0] && works[0]->retrieveOpType() == c10d::OpType::RECVANYSOURCE)
                  ? works[0]->sourceRank()
                  : -1;
          recorder.completed(trace_ids);
          signal->finish(nullptr, "", source);
          return;
        } catch (const MismatchError& e) {
          mismatch = true;
          message = e.what();
        } catch (const std::exception& e) {
          message = message_of(e);
        }
        message = c10::str("cncl ", name, " failed on rank ", rank, ": ", message);
        if (!mismatch) {
          std::lock_guard<std::mutex> lock(failure->mutex);
          if (failure->message.empty()) failure->message = message;
        }
        if (cncl_config().debug) log_line(message);
        recorder.completed(trace_ids);
        // The watchdog reports a group failure and applies TORCH_CNCL_ASYNC_ERROR_HANDLING (Note [cncl watchdog]).
        const int mode = cncl_config().async_error_handling;
        if (!mismatch && (mode == 1 || mode == 3)) {
          {
            std::lock_guard<std::mutex> lock(signal->mutex);
            signal->error_message = message;
          }
          signal->failure_pending = true;
          return;  // the watchdog ends the process
        }
        signal->finish(dist_backend_error(message), message, -1, /*breaks_group=*/!mismatch);
      }));
  return c10::make_intrusive<WorkCNCL>(std::move(signal), getRank(), op_type, name, device, std::move(outputs),
                                       timeout_, collective_stream ? coverage_ : nullptr);
}

std::vector<uint64_t> ProcessGroupCNCL::trace_launch(const std::vector<Call>& calls,
                                                     const std::shared_ptr<CommSignal>& signal, c10d::OpType op_type,
                                                     const std::vector<at::Tensor>& inputs,
                                                     const std::vector<at::Tensor>& outputs, int stream_key) {
  // Point-to-point calls carry no fingerprint (Call); a launch of them alone is p2p.
  const bool is_p2p = std::none_of(calls.begin(), calls.end(), [](const Call& c) { return c.fingerprint; });
  if (is_p2p) {
    ++p2p_seq_;
  } else {
    ++collective_seq_;
  }
  ++op_id_;
  int peer = -1;
  if (op_type == c10d::OpType::SEND) peer = (stream_key - 1) / 2;
  if (op_type == c10d::OpType::RECV) peer = (stream_key - 2) / 2;
  const std::string name =
      profiling_name(calls.size() == 1 ? op_type : c10d::OpType::COALESCED, calls[0].name, getRank(), peer);
  std::vector<uint64_t> ids;
  const FlightRecorderCNCL::Group group{pg_id_, getGroupUid(), getGroupDesc(), global_ranks_};
  if (auto id = FlightRecorderCNCL::get().record(group, collective_seq_, p2p_seq_, op_id_, name, inputs, outputs,
                                                 timeout_, is_p2p)) {
    ids.push_back(*id);
  }
  const std::string op = c10d::opTypeToString(op_type);
  watchdog_->watch(WatchdogCNCL::Watched{
      signal, collective_seq_, is_p2p, op,
      c10::str("WorkCNCL(SeqNum=", is_p2p ? p2p_seq_ : collective_seq_, ", OpType=", op, ", NumelIn=",
               total_numel(inputs), ", NumelOut=", total_numel(outputs), ", Timeout(ms)=", timeout_.count(), ")"),
      WatchdogCNCL::Clock::now(), timeout_});
  return ids;
}

void ProcessGroupCNCL::startCoalescing() {
  TORCH_CHECK(!coalescing_, "cncl: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_signal_ = std::make_shared<CommSignal>(completion_);
  coalesced_device_.reset();
  pending_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::endCoalescing() {
  TORCH_CHECK(coalescing_, "cncl: endCoalescing called without startCoalescing");
  coalescing_ = false;
  auto signal = std::move(coalesced_signal_);
  auto pending = std::move(pending_);
  pending_.clear();
  const c10::Device device =
      coalesced_device_.value_or(c10::Device(c10::DeviceType::PrivateUse1, current_device()));
  if (pending.empty()) {
    signal->finish(nullptr, "");
    return c10::make_intrusive<WorkCNCL>(std::move(signal), getRank(), c10d::OpType::COALESCED, "coalesced", device,
                                         std::vector<at::Tensor>{}, timeout_);
  }
  std::vector<Call> calls;
  std::vector<at::Tensor> inputs, outputs;
  for (auto& p : pending) {
    calls.push_back(std::move(p.call));
    inputs.insert(inputs.end(), p.inputs.begin(), p.inputs.end());
    outputs.insert(outputs.end(), p.outputs.begin(), p.outputs.end());
  }
  // One task starts every op before waiting for any, so a coalesced exchange
  // of sends and recvs cannot wait on itself.
  return launch(std::move(calls), std::move(signal), c10d::OpType::COALESCED, "coalesced", device,
                std::move(inputs), std::move(outputs), kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::barrier(const c10d::BarrierOptions& opts) {
  throw_if_broken();
  c10::DeviceIndex index = current_device();
  if (device_) index = *device_;
  if (opts.device) index = opts.device->index();
  const c10::Device device(c10::DeviceType::PrivateUse1, index);
  Call call{"barrier", std::array<int64_t, 4>{-1, -1, -1, -1},
            [](c10d::Backend& gloo) { return gloo.barrier(); }, nullptr};
  std::vector<Call> calls;
  calls.push_back(std::move(call));
  // The barrier task follows this rank's current stream, and its Work blocks
  // the host: when barrier() returns, every rank's earlier work is done.
  return launch(std::move(calls), std::make_shared<CommSignal>(completion_), c10d::OpType::BARRIER, "barrier",
                device, {}, {}, kCollectiveStream);
}

void ProcessGroupCNCL::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  throw_if_broken();
  gloo_->monitoredBarrier(opts, wait_all_ranks);
}

}  // namespace torch_mlu::distributed
