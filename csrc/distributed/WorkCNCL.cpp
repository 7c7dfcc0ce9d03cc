#include "csrc/distributed/WorkCNCL.h"

#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <mlu_runtime/queue.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUStream.h"
#include "csrc/distributed/CNCLConfig.h"

namespace torch_mlu::distributed {

void CommSignal::finish(std::exception_ptr failure, std::string failure_message, int source, bool breaks) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (done) return;
    done = true;
    breaks_group = breaks;
    error = std::move(failure);
    error_message = std::move(failure_message);
    source_rank = source;
  }
  cv.notify_all();
  if (completion) completion->notify();
}

bool CommSignal::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  return cv.wait_for(lock, timeout, [this] { return done; });
}

bool CommSignal::is_done() {
  std::lock_guard<std::mutex> lock(mutex);
  return done;
}

namespace {

uint64_t launch_count(mlu::mluQueue_t queue) {
  uint64_t count = 0;
  MLU_CHECK(mlu::mluQueueGetLaunchCount(queue, &count));
  return count;
}

}  // namespace

bool StreamCoverage::needs_wait(mlu::mluQueue_t queue) {
  const uint64_t launched = launch_count(queue);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = covered_.try_emplace(queue, launched);
  if (!inserted && it->second == launched) return false;
  it->second = launched;
  return true;
}

void StreamCoverage::wait_task_launched(mlu::mluQueue_t queue, uint64_t before, uint64_t after) {
  if (after != before + 1) return;  // another thread launched there too
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = covered_.find(queue);
  if (it != covered_.end() && it->second == before) it->second = after;
}

WorkCNCL::WorkCNCL(std::shared_ptr<CommSignal> signal, int rank, c10d::OpType op_type, const char* op_name,
                   c10::Device device, std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout,
                   std::shared_ptr<StreamCoverage> coverage)
    : c10d::Work(rank, op_type, op_name),
      signal_(std::move(signal)),
      op_name_(op_name),
      device_(device),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      coverage_(std::move(coverage)) {}

bool WorkCNCL::isCompleted() { return signal_->is_done(); }

bool WorkCNCL::isSuccess() const {
  std::lock_guard<std::mutex> lock(signal_->mutex);
  return signal_->done && !signal_->error;
}

std::exception_ptr WorkCNCL::exception() const {
  std::lock_guard<std::mutex> lock(signal_->mutex);
  return signal_->error;
}

int WorkCNCL::sourceRank() const {
  // The source is a host-side answer: wait for the recv (within its timeout).
  signal_->wait_for(timeout_ + std::chrono::seconds(10));
  std::lock_guard<std::mutex> lock(signal_->mutex);
  TORCH_CHECK(signal_->done, "cncl recv from any source: no message arrived within the process group's timeout");
  if (signal_->error) std::rethrow_exception(signal_->error);
  return signal_->source_rank;
}

std::vector<at::Tensor> WorkCNCL::result() { return outputs_; }

void WorkCNCL::make_current_stream_wait() {
  // Finished already: later work is ordered after it by the host itself.
  if (isSuccess()) return;
  // The wait outlasts the transfer's own timeout (Gloo's), so a transfer that
  // ends in an error is reported as that error, not as a second timeout.
  const auto limit = timeout_ + std::chrono::seconds(10);
  const mlu::mluQueue_t queue = getCurrentMLUStream(device_.index()).queue();
  const uint64_t before = coverage_ ? launch_count(queue) : 0;
  MLU_CHECK(mlu::mluLaunchTask(queue, "cncl wait",
                               [signal = signal_, limit](mlu::TaskContext& context) {
                                 if (!signal->wait_for(limit)) {
                                   context.fail("the collective did not finish within the process group's timeout");
                                   return;
                                 }
                                 std::lock_guard<std::mutex> lock(signal->mutex);
                                 if (signal->error) context.fail(signal->error_message);
                               }));
  if (coverage_) coverage_->wait_task_launched(queue, before, launch_count(queue));
}

void WorkCNCL::wait_on_host(std::chrono::milliseconds timeout) {
  if (!signal_->wait_for(timeout)) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("cncl ", op_name_, " on rank ", rank_, " timed out after ", timeout.count(),
                             " ms waiting for the other ranks. A rank may have died, hung, or not called ", op_name_,
                             "; check the other ranks' logs."));
  }
  std::lock_guard<std::mutex> lock(signal_->mutex);
  if (signal_->error) std::rethrow_exception(signal_->error);
}

void WorkCNCL::synchronize() { make_current_stream_wait(); }

void WorkCNCL::blockCurrentStream() { make_current_stream_wait(); }

bool WorkCNCL::wait(std::chrono::milliseconds timeout) {
  const bool host_blocking = timeout != kNoTimeout || retrieveOpType() == c10d::OpType::BARRIER;
  if (host_blocking || cncl_config().blocking_wait) {
    wait_on_host(timeout == kNoTimeout ? timeout_ + std::chrono::seconds(10) : timeout);
  } else {
    {
      std::lock_guard<std::mutex> lock(signal_->mutex);
      if (signal_->error) std::rethrow_exception(signal_->error);
    }
    make_current_stream_wait();
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkCNCL::getFuture() {
  std::unique_lock<std::mutex> lock(future_mutex_);
  if (!future_) {
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{device_});
    lock.unlock();
    if (signal_->is_done()) {
      complete_future();
    } else {
      signal_->completion->add(c10::intrusive_ptr<WorkCNCL>::reclaim_copy(this));
    }
    lock.lock();
  }
  return future_;
}

void WorkCNCL::complete_future() {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    if (!future_ || future_completed_) return;
    future_completed_ = true;
    future = future_;
  }
  std::exception_ptr error = exception();
  if (error) {
    future->setError(error);
    return;
  }
  // markCompleted records an event on the device's current stream of this
  // thread; the transfer is over, so later users only need that ordering.
  c10::DeviceGuard guard(device_);
  future->markCompleted(c10::IValue(outputs_));
}

CompletionQueue::~CompletionQueue() { stop(); }

void CompletionQueue::add(c10::intrusive_ptr<WorkCNCL> work) {
  auto signal = work->signal_;
  push(Entry{std::move(signal), std::move(work), {}});
}

void CompletionQueue::hold(std::shared_ptr<CommSignal> signal, std::vector<at::Tensor> tensors) {
  push(Entry{std::move(signal), nullptr, std::move(tensors)});
}

void CompletionQueue::push(Entry entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  pending_.push_back(std::move(entry));
  cv_.notify_one();
}

void CompletionQueue::notify() {
  std::lock_guard<std::mutex> lock(mutex_);
  cv_.notify_one();
}

void CompletionQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    std::vector<Entry> finished;
    for (size_t i = 0; i < pending_.size();) {
      if (pending_[i].signal->is_done()) {
        finished.push_back(std::move(pending_[i]));
        pending_[i] = std::move(pending_.back());
        pending_.pop_back();
      } else {
        ++i;
      }
    }
    if (!finished.empty()) {
      lock.unlock();
      for (auto& entry : finished) {
        if (entry.work) entry.work->complete_future();
      }
      finished.clear();  // drop the works and tensors on this host thread
      lock.lock();
      continue;
    }
    if (stopping_) break;
    cv_.wait(lock);
  }
}

void CompletionQueue::stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    thread = std::move(thread_);
  }
  cv_.notify_one();
  if (thread.joinable()) thread.join();
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.clear();
}

}  // namespace torch_mlu::distributed
