// MLUStream: a c10::Stream of device type mlu, backed by a runtime queue.
// Mirrors c10/cuda/CUDAStream.h.
//
// Stream ids: 0 is the device's default queue; 1..kStreamsPerPool are the
// low-priority pool and kStreamsPerPool+1..2*kStreamsPerPool the high-priority
// pool; ids from kExternalStreamBase on name queues created outside torch_mlu
// (torch.mlu.ExternalStream), registered once per handle. Pools are created
// lazily per device and handed out round-robin; their queues live for the
// whole process, so a stream id stays valid forever. An external queue must
// outlive every use of its stream, as with CUDA.
// The current stream is per host thread and per device (default: stream 0).
#pragma once

#include <optional>

#include <mlu_runtime/queue.h>

#include <c10/core/Stream.h>

namespace torch_mlu {

constexpr int kStreamsPerPool = 32;
constexpr c10::StreamId kExternalStreamBase = 1 << 16;

class MLUStream {
 public:
  // Wraps a stream of device type mlu; throws otherwise.
  explicit MLUStream(c10::Stream stream);

  mlu::mluQueue_t queue() const;
  c10::Stream unwrap() const { return stream_; }
  operator c10::Stream() const { return stream_; }
  c10::Device device() const { return stream_.device(); }
  c10::DeviceIndex device_index() const { return stream_.device_index(); }
  c10::StreamId id() const { return stream_.id(); }
  int priority() const;
  bool query() const;
  void synchronize() const;
  // The id of the graph capture this stream records into; 0 when it does
  // not (Note [Stream capture] in mlu_runtime/graph.h).
  uint64_t capture_id() const;

  bool operator==(const MLUStream& other) const { return stream_ == other.stream_; }
  bool operator!=(const MLUStream& other) const { return !(*this == other); }

 private:
  c10::Stream stream_;
};

MLUStream getDefaultMLUStream(c10::DeviceIndex device = -1);
MLUStream getCurrentMLUStream(c10::DeviceIndex device = -1);
MLUStream getStreamFromPool(bool high_priority = false, c10::DeviceIndex device = -1);
// The stream of a queue created outside torch_mlu, on `device`.
MLUStream getStreamFromExternal(mlu::mluQueue_t queue, c10::DeviceIndex device);
// The id of the stream that runs on `queue` (a queue of ours or an external
// one already wrapped), for naming profiler rows; nullopt for any other queue.
std::optional<c10::StreamId> stream_id_of_queue(c10::DeviceIndex device, mlu::mluQueue_t queue);
// Makes `stream` current on its device for this thread; returns the previous one.
MLUStream exchangeCurrentMLUStream(MLUStream stream);
void setCurrentMLUStream(MLUStream stream);
// Makes `waiter` wait (on the device, not the host) for the work queued so
// far on `signaller`. Uses one reusable event per host thread: a wait keeps
// the record it saw (Note [Event versioning]), so re-recording is safe.
void stream_wait_stream(const MLUStream& waiter, const MLUStream& signaller);

}  // namespace torch_mlu

template <>
struct std::hash<torch_mlu::MLUStream> {
  size_t operator()(const torch_mlu::MLUStream& stream) const noexcept {
    return std::hash<c10::Stream>{}(stream.unwrap());
  }
};
