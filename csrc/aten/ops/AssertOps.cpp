// torch._assert_async on mlu: a device-side check, as on CUDA. The condition
// (a one-element tensor) is read by a task on the current stream; a zero
// fails the task with the message, raised at the next synchronisation, and
// the host never waits. Composite ops use it to validate data without a sync
// (binary_cross_entropy's input range).
#include <string>

#include <ATen/ops/_to_copy.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

void assert_async(const at::Tensor& self, std::string message) {
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
  c10::DeviceGuard guard(self.device());
  const at::Tensor condition = self.to(at::kBool);
  const bool* value = device_ptr<const bool>(condition);
  if (message.empty()) message = "Expected Tensor with single nonzero value, but got zero";
  launch_kernel(self.device().index(), "_assert_async", [value, message](mlu::TaskContext& context) {
    if (!*value) context.fail(message);
  });
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/AssertOps.inc"
