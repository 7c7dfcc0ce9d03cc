#include "csrc/aten/CpuOneDnn.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace torch_mlu {

bool cpu_mkldnn_takes(at::ScalarType type) {
  // ideep's device checks, asked once.
  static const bool bf16 =
      c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_is_mkldnn_bf16_supported", "").typed<bool()>().call();
  static const bool fp16 =
      c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_is_mkldnn_fp16_supported", "").typed<bool()>().call();
  return at::globalContext().userEnabledMkldnn() && (type == at::kBFloat16 ? bf16 : fp16);
}

}  // namespace torch_mlu
