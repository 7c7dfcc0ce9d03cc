#include "csrc/aten/TensorStatistics.h"

#include <vector>

#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <mlu_kernels/reduce.h>

#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {

namespace k = mlu::kernels;

namespace {

// t as a dense floating tensor the kernel reads as one span.
at::Tensor dense_floating(const at::Tensor& t, size_t i, const char* which) {
  TORCH_CHECK_VALUE(t.defined() && (t.is_floating_point() || t.is_complex()), "tensor statistics: ", which, "[", i,
                    "] must be a floating-point or complex tensor, got ",
                    t.defined() ? c10::toString(t.scalar_type()) : "an undefined tensor");
  TORCH_CHECK_VALUE(t.numel() > 0, "tensor statistics: ", which, "[", i, "] has no elements");
  const at::Tensor real = t.is_complex() ? at::view_as_real(t.resolve_conj()) : t;
  TORCH_CHECK_VALUE(kernel_dtype(real.scalar_type()).has_value(), "tensor statistics: ", which, "[", i, "] has dtype ",
                    real.scalar_type(), ", which mlu's reductions do not take");
  return real.is_non_overlapping_and_dense() ? real : real.contiguous();
}

}  // namespace

at::Tensor tensor_statistics(at::TensorList tensors, at::TensorList minus) {
  TORCH_CHECK_VALUE(!tensors.empty(), "tensor statistics: no tensors");
  TORCH_CHECK_VALUE(minus.empty() || minus.size() == tensors.size(), "tensor statistics: ", tensors.size(),
                    " tensors but ", minus.size(), " to subtract");
  const c10::Device device = tensors[0].device();
  TORCH_CHECK_VALUE(device.type() == c10::DeviceType::PrivateUse1, "tensor statistics: the tensors must be on mlu, ",
                    "got one on ", device);
  c10::DeviceGuard guard(device);
  std::vector<at::Tensor> keep;  // the dense copies, alive until the launch (then stream-ordered)
  std::vector<k::StatisticsSpan> spans;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK_VALUE(tensors[i].device() == device, "tensor statistics: tensors[", i, "] is on ", tensors[i].device(),
                      ", tensors[0] on ", device);
    const at::Tensor data = dense_floating(tensors[i], i, "tensors");
    k::StatisticsSpan span{device_ptr<const void>(data), nullptr, *kernel_dtype(data.scalar_type()), data.numel()};
    if (!minus.empty()) {
      TORCH_CHECK_VALUE(minus[i].device() == device && minus[i].sizes() == tensors[i].sizes() &&
                            minus[i].scalar_type() == tensors[i].scalar_type(),
                        "tensor statistics: minus[", i, "] must be like tensors[", i, "] (", tensors[i].sizes(), " ",
                        tensors[i].scalar_type(), " on ", device, "), got ", minus[i].sizes(), " ",
                        minus[i].scalar_type(), " on ", minus[i].device());
      // The same element order as `data`: strides equal, or both contiguous.
      at::Tensor other = dense_floating(minus[i], i, "minus");
      if (other.strides() != data.strides()) other = other.contiguous();
      const at::Tensor both = other.strides() == data.strides() ? data : data.contiguous();
      span.data = device_ptr<const void>(both);
      span.minus = device_ptr<const void>(other);
      keep.push_back(both);
      keep.push_back(other);
    } else {
      keep.push_back(data);
    }
    spans.push_back(span);
  }
  at::Tensor out = at::empty({static_cast<int64_t>(spans.size()), k::kStatistics},
                             at::TensorOptions().dtype(at::kDouble).device(device));
  double* result = device_ptr<double>(out);
  launch_kernel(device.index(), "statistics",
                [spans = std::move(spans), result] { k::statistics(spans.data(), spans.size(), result); });
  return out;
}

}  // namespace torch_mlu
