// Tensor.record_stream(s) on mlu: tells the caching allocator that the
// tensor's memory is in use on `s`. See Note [Stream-ordered reuse].

#include "csrc/aten/DeviceCheck.h"
#include "csrc/core/MLUCachingAllocator.h"

namespace torch_mlu {
namespace {

void record_stream_mlu(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected an mlu stream, got a ",
              stream.device_type(), " stream");
  getMLUDeviceAllocator()->recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/RecordStream.inc"
