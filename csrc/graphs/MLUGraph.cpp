#include "csrc/graphs/MLUGraph.h"

#include <atomic>
#include <mutex>

#include <ATen/core/GraphImplInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "csrc/core/MLUCachingAllocator.h"
#include "csrc/core/MLUException.h"
#include "csrc/core/MLUGeneratorImpl.h"

namespace torch_mlu {
namespace {

// Pool ids as CUDA numbers them: {n, 0} for the pool a graph creates at
// capture_begin, {0, n} for handles from graph_pool_handle().
std::atomic<uint64_t> last_pool_uid{0};

mlu::mluQueueCaptureMode runtime_mode(CaptureErrorMode mode) {
  switch (mode) {
    case CaptureErrorMode::Global: return mlu::mluQueueCaptureModeGlobal;
    case CaptureErrorMode::ThreadLocal: return mlu::mluQueueCaptureModeThreadLocal;
    case CaptureErrorMode::Relaxed: return mlu::mluQueueCaptureModeRelaxed;
  }
  return mlu::mluQueueCaptureModeGlobal;
}

MLUGeneratorImpl& default_generator(c10::DeviceIndex device) { return *get_mlu_generator(std::nullopt, device); }

}  // namespace

void refuse_in_capture(c10::DeviceIndex device, const std::string& what) {
  MLU_CHECK(mlu::mluQueueRefuseInCapture(getCurrentMLUStream(device).queue(), what.c_str()));
}

CaptureErrorMode parse_capture_error_mode(const std::string& name) {
  if (name == "global" || name == "default") return CaptureErrorMode::Global;
  if (name == "thread_local") return CaptureErrorMode::ThreadLocal;
  if (name == "relaxed") return CaptureErrorMode::Relaxed;
  TORCH_CHECK(false, "Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, got ", name);
}

MLUGraph::MLUGraph(bool keep_graph) : keep_graph_(keep_graph) {}

MLUGraph::~MLUGraph() {
  try {
    if (capturing_) {  // destroyed mid-capture: end it and drop whatever it recorded
      capture_end();
    }
  } catch (...) {
  }
  try {
    reset();
  } catch (...) {
  }
}

void MLUGraph::capture_begin(c10::MempoolId_t pool, CaptureErrorMode mode) {
  TORCH_CHECK(!capturing_, "This MLUGraph is already capturing; call capture_end() first.");
  TORCH_CHECK(graph_ == nullptr,
              "This MLUGraph instance already owns a captured graph. To capture a new graph, create a new instance "
              "or call reset() first.");
  const MLUStream stream = getCurrentMLUStream();
  TORCH_CHECK(stream != getDefaultMLUStream(stream.device_index()),
              "MLU graphs must be captured on a non-default stream. (However, after capture, it's ok to replay "
              "them on the default stream.)");
  device_ = stream.device_index();
  // Other graphs may be capturing on this device meanwhile (other threads, other streams): the runtime keeps
  // the captures apart and applies each one's capture_error_mode, the allocator routes each capture to its
  // own pool, and the generator numbers each capture's draws apart (Note [Graph-safe random numbers]).
  MLUGeneratorImpl& generator = default_generator(device_);
  capture_stream_ = stream.id();
  pool_ = (pool.first != 0 || pool.second != 0) ? pool : c10::MempoolId_t{++last_pool_uid, 0};
  MLU_CHECK(mlu::mluQueueBeginCapture(stream.queue(), runtime_mode(mode)));
  capture_id_ = stream.capture_id();
  const void* arguments = nullptr;
  MLU_CHECK(mlu::mluQueueGetCaptureArguments(stream.queue(), &arguments));
  MLUCachingAllocator::beginAllocateToPool(
      device_, pool_, [id = capture_id_](const MLUStream& s) { return s.capture_id() == id; });
  capturing_ = true;
  std::lock_guard<std::mutex> lock(generator.mutex_);
  generator.capture_prologue(capture_id_, static_cast<const uint64_t*>(arguments));
}

void MLUGraph::capture_end() {
  TORCH_CHECK(capturing_, "MLUGraph::capture_end: no capture is underway; call capture_begin() first.");
  const MLUStream stream = getCurrentMLUStream(device_);
  TORCH_CHECK(stream.id() == capture_stream_, "Capture must end on the same stream it began on.");
  mlu::mluGraph_t graph = nullptr;
  const mlu::mluError_t status = mlu::mluQueueEndCapture(stream.queue(), &graph);
  if (status == mlu::mluErrorStreamCaptureWrongThread) MLU_CHECK(status);  // still capturing: end it from its thread
  capturing_ = false;
  MLUCachingAllocator::endAllocateToPool(device_, pool_);
  {
    MLUGeneratorImpl& generator = default_generator(device_);
    std::lock_guard<std::mutex> lock(generator.mutex_);
    random_draws_ = generator.capture_epilogue(capture_id_);
  }
  if (status != mlu::mluSuccess) {
    MLUCachingAllocator::releasePool(device_, pool_);
    pool_ = {0, 0};
    MLU_CHECK(status);
  }
  graph_ = graph;
  if (num_tasks() == 0) {
    TORCH_WARN("The MLU Graph is empty. This usually means that the graph was attempted to be captured on wrong "
               "device or stream.");
  }
}

void MLUGraph::instantiate() {
  TORCH_CHECK(graph_ != nullptr, "Called MLUGraph::instantiate without a preceding successful capture.");
}

void MLUGraph::replay() {
  TORCH_CHECK(graph_ != nullptr, "Called MLUGraph::replay without a preceding successful capture.");
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_));
  uint64_t arguments[2] = {0, 0};
  size_t bytes = 0;
  if (random_draws_ > 0) {  // Note [Graph-safe random numbers]
    MLUGeneratorImpl& generator = default_generator(device_);
    std::lock_guard<std::mutex> lock(generator.mutex_);
    std::tie(arguments[0], arguments[1]) = generator.replay_prologue(random_draws_);
    bytes = sizeof arguments;
  }
  MLU_CHECK(mlu::mluGraphLaunchWithArguments(graph_, getCurrentMLUStream(device_).queue(), arguments, bytes));
}

void MLUGraph::reset() {
  check_no_capture("reset()");
  if (graph_ == nullptr) return;
  MLU_CHECK(mlu::mluGraphDestroy(graph_));  // replays already queued keep the tasks alive
  graph_ = nullptr;
  MLUCachingAllocator::releasePool(device_, pool_);
  pool_ = {0, 0};
  random_draws_ = 0;
}

c10::MempoolId_t MLUGraph::pool() const {
  TORCH_CHECK(capturing_ || graph_ != nullptr, "Called MLUGraph::pool() without a preceding successful capture.");
  return pool_;
}

void MLUGraph::debug_dump(const std::string& path) const {
  if (!debug_) {
    TORCH_WARN("MLUGraph::debug_dump: debug mode is off; call enable_debug_mode() before capture_begin()");
    return;
  }
  TORCH_CHECK(graph_ != nullptr, "Called MLUGraph::debug_dump without a preceding successful capture.");
  MLU_CHECK(mlu::mluGraphDebugDotPrint(graph_, path.c_str()));
}

size_t MLUGraph::num_tasks() const {
  if (graph_ == nullptr) return 0;
  size_t count = 0;
  MLU_CHECK(mlu::mluGraphGetTaskCount(graph_, &count));
  return count;
}

c10::MempoolId_t MLUGraph::graph_pool_handle() { return {0, ++last_pool_uid}; }

void MLUGraph::check_no_capture(const char* what) const {
  TORCH_CHECK(!capturing_, "MLUGraph::", what, " while the graph is capturing; call capture_end() first.");
}

namespace {

// torch.accelerator.Graph on mlu (REGISTER_GRAPH_IMPL): the same MLUGraph.
class MLUGraphImpl final : public at::GraphImplInterface {
 public:
  explicit MLUGraphImpl(const at::GraphImplArgs& args) : graph_(args.keep_graph) {}

  void capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode mode) override {
    graph_.capture_begin(pool, mode == at::GraphCaptureMode::ThreadLocal ? CaptureErrorMode::ThreadLocal
                               : mode == at::GraphCaptureMode::Relaxed  ? CaptureErrorMode::Relaxed
                                                                        : CaptureErrorMode::Global);
  }
  void capture_end() override { graph_.capture_end(); }
  void instantiate() override { graph_.instantiate(); }
  void replay() override { graph_.replay(); }
  void reset() override { graph_.reset(); }
  c10::MempoolId_t pool() const override { return graph_.pool(); }
  void enable_debug_mode() override { graph_.enable_debug_mode(); }
  void debug_dump(const std::string& path) override { graph_.debug_dump(path); }

 private:
  MLUGraph graph_;
};

}  // namespace
}  // namespace torch_mlu

namespace at {
// The key is DeviceTypeName(PrivateUse1, /*lower_case=*/false): the backend's registered name, upper-cased.
REGISTER_GRAPH_IMPL(MLU, torch_mlu::MLUGraphImpl);
}  // namespace at
