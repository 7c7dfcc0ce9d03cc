// MLUGraph: one capture of a stream's work, replayed with one launch
// (cf. at::cuda::CUDAGraph). torch.mlu.MLUGraph and torch.accelerator.Graph
// are front ends of this class.
//
// Life cycle: capture_begin on the current (non-default) stream -> work runs
// into the capture (Note [Stream capture] in mlu_runtime/graph.h), its
// allocations come from the graph's private pool (Note [Graph pools]) and its
// random ops draw per replay (Note [Graph-safe random numbers]) ->
// capture_end -> replay() any number of times, on the current stream ->
// reset() (or destruction) frees the graph and drops its use of the pool.
// A failed capture (an operation capture refuses) ends cleanly: capture_end
// raises the reason, the stream and the allocator are usable, and the
// instance can capture again.
#pragma once

#include <mlu_runtime/graph.h>

#include <string>

#include <c10/core/Allocator.h>

#include "csrc/core/MLUStream.h"

namespace torch_mlu {

enum class CaptureErrorMode { Global, ThreadLocal, Relaxed };

// Raises if the current stream of `device` is capturing: `what` (an op the
// capture cannot record, such as a host read of device data or the CPU
// fallback) is named in the error and the capture is invalidated.
void refuse_in_capture(c10::DeviceIndex device, const std::string& what);

// "global", "thread_local", "relaxed" (torch.cuda.graph's names); "default" is global, as on CUDA.
CaptureErrorMode parse_capture_error_mode(const std::string& name);

class MLUGraph {
 public:
  explicit MLUGraph(bool keep_graph = false);
  ~MLUGraph();
  MLUGraph(const MLUGraph&) = delete;
  MLUGraph& operator=(const MLUGraph&) = delete;

  // pool {0, 0}: a new private pool; otherwise another graph's pool() or a graph_pool_handle().
  void capture_begin(c10::MempoolId_t pool = {0, 0}, CaptureErrorMode mode = CaptureErrorMode::Global);
  void capture_end();
  // A captured graph is executable as it is; kept for the CUDA/accelerator API.
  void instantiate();
  void replay();
  void reset();
  c10::MempoolId_t pool() const;
  void enable_debug_mode() { debug_ = true; }
  // Writes the graph as Graphviz (debug mode only, as on CUDA).
  void debug_dump(const std::string& path) const;
  // The number of tasks one replay runs.
  size_t num_tasks() const;

  // A pool id no graph owns yet ({0, n}), for graphs that share a pool.
  static c10::MempoolId_t graph_pool_handle();

 private:
  void check_no_capture(const char* what) const;

  bool keep_graph_;
  bool debug_ = false;
  bool capturing_ = false;
  mlu::mluGraph_t graph_ = nullptr;
  c10::MempoolId_t pool_{0, 0};
  c10::DeviceIndex device_ = -1;
  c10::StreamId capture_stream_ = 0;
  uint64_t capture_id_ = 0;
  uint64_t random_draws_ = 0;  // Note [Graph-safe random numbers]
};

}  // namespace torch_mlu
