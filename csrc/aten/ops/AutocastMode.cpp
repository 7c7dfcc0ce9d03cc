// torch.autocast("mlu"): the cast policies for the AutocastPrivateUse1
// dispatch key, the same op lists CUDA uses (ATen/autocast_mode.h's
// AT_FORALL_* lists, shared by every backend): matrix products, convolutions
// and attention run in the autocast dtype (lower_precision_fp); numerically
// sensitive ops (softmax, norms, losses, exp/log, ...) in float32 (fp32,
// fp32_set_opt_dtype, fp32_append_dtype); ops mixing dtypes at the widest
// (promote). Every other op falls through unchanged. binary_cross_entropy is
// banned under autocast, with CUDA's message.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_mlu {
namespace {

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE spells its signatures unqualified.
  using at::IntArrayRef;
  using at::Scalar;
  using at::ScalarType;
  using at::Tensor;
#define MLU_KERNEL_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define MLU_KERNEL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define MLU_KERNEL_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define MLU_KERNEL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(MLU_KERNEL_LOWER_PRECISION_FP)
  AT_FORALL_FP32(MLU_KERNEL_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(MLU_KERNEL_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(MLU_KERNEL_PROMOTE)
#undef MLU_KERNEL_LOWER_PRECISION_FP
#undef MLU_KERNEL_FP32
#undef MLU_KERNEL_FP32_SET_OPT_DTYPE
#undef MLU_KERNEL_PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(torch_mlu::binary_cross_entropy_banned));
}

}  // namespace torch_mlu
