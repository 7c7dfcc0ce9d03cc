// Detection's box operators (mlu_kernels/box.h) as torch.ops.torch_mlu.nms,
// roi_align, _roi_align_backward, roi_pool and _roi_pool_backward, with
// torchvision's schemas, checks and messages, on mlu (queued on the current
// stream) and on the CPU (run at the call). torch_mlu/ops adds the Python
// API of torchvision.ops, autograd, fake tensors and autocast.
//
// Note [torchvision's operators on mlu]
// torchvision defines torchvision::nms, roi_align, ... in its own C++
// library, which PyPI's wheels cannot load over a CPU torch. Its kernels for
// PrivateUse1 are registered here anyway, boxed (no schema is inferred from a
// C++ signature, so nothing is checked against torchvision's schema when it
// loads, and a torchvision whose schema differs still imports): whenever a
// torchvision with working operators is imported beside torch_mlu, its
// detection models run these kernels on mlu, and its autograd (registered on
// the Autograd alias key, which covers AutogradPrivateUse1) calls the
// backward kernels. Each boxed kernel checks the operator's schema first and
// names the difference if torchvision's arguments are not the ones it reads.
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/zeros.h>
#include <mlu_kernels/box.h>
#include <torch/library.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/core/MLULaunch.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;

// The address a kernel uses: the data itself on the CPU, device_ptr on mlu.
template <class E>
E* data_of(T t) {
  if (!t.is_cpu()) return device_ptr<E>(t);
  if constexpr (std::is_const_v<E>) {
    return static_cast<E*>(t.const_data_ptr());
  } else {
    return static_cast<E*>(t.mutable_data_ptr());
  }
}

std::string batch_index_message(const char* op, int64_t bad, int64_t batch) {
  return std::string(op) + ": a roi's batch index (column 0 of rois) is " + std::to_string(bad) + ", outside [0, " +
         std::to_string(batch) + ") for an input of " + std::to_string(batch) + " images";
}

// Runs `kernel` (returning an IndexCheck) where `where`'s data lives: queued on
// its mlu device's current stream (a bad index is a device-side error), or
// now on the CPU (a bad index raises IndexError).
template <class F>
void run_checked(T where, const char* op, int64_t batch, F kernel) {
  if (where.is_cpu()) {
    const k::IndexCheck check = kernel();
    TORCH_CHECK_INDEX(check.ok, batch_index_message(op, check.bad_index, batch));
    return;
  }
  launch_kernel(where.device().index(), op, [=](mlu::TaskContext& context) {
    const k::IndexCheck check = kernel();
    if (!check.ok) context.fail(batch_index_message(op, check.bad_index, batch));
  });
}

void check_device(T first, T other, const char* op, const char* first_name, const char* other_name) {
  TORCH_CHECK(first.device() == other.device(), op, ": expected ", other_name, " on ", first.device(), " like ",
              first_name, ", but got it on ", other.device());
}

k::ScalarType roi_type(T input, const char* op) {
  switch (input.scalar_type()) {
    case at::kFloat:
      return k::ScalarType::Float32;
    case at::kDouble:
      return k::ScalarType::Float64;
    case at::kHalf:
      return k::ScalarType::Float16;
    case at::kBFloat16:
      return k::ScalarType::BFloat16;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", op, "\" not implemented for '", input.scalar_type(),
                                  "': it takes float16, bfloat16, float32 or float64 images");
  }
}

void check_rois(T input, T rois, const char* op) {
  check_device(input, rois, op, "input", "rois");
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, "rois must have shape as Tensor[K, 5], got ", rois.sizes());
  TORCH_CHECK(input.scalar_type() == rois.scalar_type(), "Expected tensor for input to have the same type as tensor ",
              "for rois; but type ", input.scalar_type(), " does not equal ", rois.scalar_type());
}

k::RoiProblem problem_of(T rois, int64_t batch, int64_t channels, int64_t height, int64_t width, double spatial_scale,
                         int64_t pooled_height, int64_t pooled_width, const char* op) {
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0, op, ": the output size must be positive, got (", pooled_height,
              ", ", pooled_width, ")");
  k::RoiProblem p;
  p.type = roi_type(rois, op);
  p.batch = batch;
  p.channels = channels;
  p.height = height;
  p.width = width;
  p.rois = rois.size(0);
  p.roi_data = data_of<const void>(rois);
  p.spatial_scale = spatial_scale;
  p.pooled_height = pooled_height;
  p.pooled_width = pooled_width;
  return p;
}

at::Tensor nms(T dets, T scores, double iou_threshold) {
  TORCH_CHECK(dets.dim() == 2, "boxes should be a 2d tensor, got ", dets.dim(), "D");
  TORCH_CHECK(dets.size(1) == 4, "boxes should have 4 elements in dimension 1, got ", dets.size(1));
  TORCH_CHECK(scores.dim() == 1, "scores should be a 1d tensor, got ", scores.dim(), "D");
  TORCH_CHECK(dets.size(0) == scores.size(0), "boxes and scores should have same number of elements in ",
              "dimension 0, got ", dets.size(0), " and ", scores.size(0));
  check_device(dets, scores, "nms", "boxes", "scores");
  TORCH_CHECK_NOT_IMPLEMENTED(dets.scalar_type() == at::kFloat || dets.scalar_type() == at::kDouble,
                              "\"nms_kernel\" not implemented for '", dets.scalar_type(),
                              "': nms takes float32 or float64 boxes (autocast runs it in float32)");
  TORCH_CHECK(dets.scalar_type() == scores.scalar_type(), "dets should have the same type as scores");
  c10::OptionalDeviceGuard guard(dets.device());
  if (dets.numel() == 0) return at::empty({0}, dets.options().dtype(at::kLong));
  const int64_t n = dets.size(0);
  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor boxes = dets.contiguous();
  at::Tensor keep = at::empty({n}, dets.options().dtype(at::kLong));
  at::Tensor count = at::empty({}, dets.options().dtype(at::kLong));
  const k::ScalarType type = dets.scalar_type() == at::kDouble ? k::ScalarType::Float64 : k::ScalarType::Float32;
  const void* box_data = data_of<const void>(boxes);
  const int64_t* order_data = data_of<const int64_t>(order);
  int64_t* keep_data = data_of<int64_t>(keep);
  int64_t* count_data = data_of<int64_t>(count);
  run_checked(dets, "nms", 0, [=] {
    *count_data = k::nms(type, n, box_data, order_data, iou_threshold, keep_data);
    return k::IndexCheck{};
  });
  // The kept count is read back (a synchronisation, as on CUDA); the result is a view of the first ones.
  return keep.narrow(0, 0, count.item<int64_t>());
}

at::Tensor roi_align(T input, T rois, double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                     int64_t sampling_ratio, bool aligned) {
  check_rois(input, rois, "roi_align");
  TORCH_CHECK(input.dim() == 4, "roi_align: expected a 4-D input [N, C, H, W], got ", input.dim(), "-D");
  c10::OptionalDeviceGuard guard(input.device());
  const at::Tensor r = rois.contiguous(), image = input.contiguous();
  k::RoiProblem p = problem_of(r, input.size(0), input.size(1), input.size(2), input.size(3), spatial_scale,
                               pooled_height, pooled_width, "roi_align");
  p.sampling_ratio = sampling_ratio;
  p.aligned = aligned;
  at::Tensor output = at::empty({p.rois, p.channels, pooled_height, pooled_width}, input.options());
  if (output.numel() == 0) return output;
  const void* in = data_of<const void>(image);
  void* out = data_of<void>(output);
  run_checked(input, "roi_align", p.batch, [=] { return k::roi_align_forward(p, in, out); });
  return output;
}

at::Tensor roi_align_backward(T grad, T rois, double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                              int64_t batch_size, int64_t channels, int64_t height, int64_t width,
                              int64_t sampling_ratio, bool aligned) {
  check_rois(grad, rois, "roi_align_backward");
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              "roi_align_backward: grad of sizes ", grad.sizes(), " is not the forward's [", rois.size(0), ", ",
              channels, ", ", pooled_height, ", ", pooled_width, "]");
  c10::OptionalDeviceGuard guard(grad.device());
  const at::Tensor r = rois.contiguous(), g = grad.contiguous();
  k::RoiProblem p = problem_of(r, batch_size, channels, height, width, spatial_scale, pooled_height, pooled_width,
                               "roi_align_backward");
  p.sampling_ratio = sampling_ratio;
  p.aligned = aligned;
  at::Tensor grad_input = at::empty({batch_size, channels, height, width}, grad.options());
  if (grad_input.numel() == 0) return grad_input;
  if (g.numel() == 0) return grad_input.zero_();
  const void* g_data = data_of<const void>(g);
  void* out = data_of<void>(grad_input);
  run_checked(grad, "roi_align_backward", p.batch, [=] { return k::roi_align_backward(p, g_data, out); });
  return grad_input;
}

std::tuple<at::Tensor, at::Tensor> roi_pool(T input, T rois, double spatial_scale, int64_t pooled_height,
                                            int64_t pooled_width) {
  check_rois(input, rois, "roi_pool");
  TORCH_CHECK(input.dim() == 4, "roi_pool: expected a 4-D input [N, C, H, W], got ", input.dim(), "-D");
  c10::OptionalDeviceGuard guard(input.device());
  const at::Tensor r = rois.contiguous(), image = input.contiguous();
  const k::RoiProblem p = problem_of(r, input.size(0), input.size(1), input.size(2), input.size(3), spatial_scale,
                                     pooled_height, pooled_width, "roi_pool");
  at::Tensor output = at::empty({p.rois, p.channels, pooled_height, pooled_width}, input.options());
  at::Tensor argmax = at::empty(output.sizes(), input.options().dtype(at::kInt));
  if (output.numel() == 0) return {output, argmax};
  const void* in = data_of<const void>(image);
  void* out = data_of<void>(output);
  int32_t* arg = data_of<int32_t>(argmax);
  run_checked(input, "roi_pool", p.batch, [=] { return k::roi_pool_forward(p, in, out, arg); });
  return {output, argmax};
}

at::Tensor roi_pool_backward(T grad, T rois, T argmax, double spatial_scale, int64_t pooled_height,
                             int64_t pooled_width, int64_t batch_size, int64_t channels, int64_t height,
                             int64_t width) {
  check_rois(grad, rois, "roi_pool_backward");
  check_device(grad, argmax, "roi_pool_backward", "grad", "argmax");
  TORCH_CHECK(argmax.scalar_type() == at::kInt, "roi_pool_backward: argmax must be int32, got ", argmax.scalar_type());
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width && argmax.sizes() == grad.sizes(),
              "roi_pool_backward: grad of sizes ", grad.sizes(), " and argmax of sizes ", argmax.sizes(),
              " are not the forward's [", rois.size(0), ", ", channels, ", ", pooled_height, ", ", pooled_width, "]");
  c10::OptionalDeviceGuard guard(grad.device());
  const at::Tensor r = rois.contiguous(), g = grad.contiguous(), a = argmax.contiguous();
  const k::RoiProblem p = problem_of(r, batch_size, channels, height, width, spatial_scale, pooled_height, pooled_width,
                                     "roi_pool_backward");
  at::Tensor grad_input = at::empty({batch_size, channels, height, width}, grad.options());
  if (grad_input.numel() == 0) return grad_input;
  if (g.numel() == 0) return grad_input.zero_();
  const void* g_data = data_of<const void>(g);
  const int32_t* arg = data_of<const int32_t>(a);
  void* out = data_of<void>(grad_input);
  run_checked(grad, "roi_pool_backward", p.batch, [=] { return k::roi_pool_backward(p, g_data, arg, out); });
  return grad_input;
}

// ---- torchvision's operators (Note [torchvision's operators on mlu]) ----

// The schema torchvision 0.28 declares for each operator these kernels serve.
constexpr const char* kTorchvisionSchemas[][2] = {
    {"nms", "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"},
    {"roi_align",
     "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
     "int sampling_ratio, bool aligned) -> Tensor"},
    {"_roi_align_backward",
     "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
     "SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor"},
    {"roi_pool",
     "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> "
     "(Tensor, Tensor)"},
    {"_roi_pool_backward",
     "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
     "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor"},
};

// Refuses to read the stack of an operator whose arguments differ from the ones this kernel knows.
void check_torchvision_schema(const c10::OperatorHandle& op) {
  const std::string name = op.schema().name().substr(std::string("torchvision::").size());
  for (const auto& [known, schema] : kTorchvisionSchemas) {
    if (name != known) continue;
    const c10::FunctionSchema expected = torch::schema(schema);
    const auto& got = op.schema().arguments();
    bool same = got.size() == expected.arguments().size();
    // type() is IntType for int and SymInt alike (older torchvisions declare int).
    for (size_t i = 0; same && i < got.size(); ++i) {
      same = got[i].type()->kind() == expected.arguments()[i].type()->kind();
    }
    TORCH_CHECK(same, "torch_mlu's kernel for torchvision::", name, " reads the arguments of torchvision 0.28's ",
                schema, ", but this torchvision declares ", op.schema(), ": call torch_mlu.ops.", name,
                " instead, or use a torchvision whose operator matches");
    return;
  }
}

int64_t int_at(const torch::jit::Stack& stack, size_t at) { return stack[at].toInt(); }

void torchvision_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  check_torchvision_schema(op);
  const std::string& name = op.schema().name();
  const size_t arity = op.schema().arguments().size();
  torch::jit::Stack args(stack->end() - static_cast<std::ptrdiff_t>(arity), stack->end());
  stack->erase(stack->end() - static_cast<std::ptrdiff_t>(arity), stack->end());
  const auto& a = args;
  if (name == "torchvision::nms") {
    stack->emplace_back(nms(a[0].toTensor(), a[1].toTensor(), a[2].toDouble()));
  } else if (name == "torchvision::roi_align") {
    stack->emplace_back(roi_align(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), int_at(a, 3), int_at(a, 4),
                                  int_at(a, 5), a[6].toBool()));
  } else if (name == "torchvision::_roi_align_backward") {
    stack->emplace_back(roi_align_backward(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), int_at(a, 3),
                                           int_at(a, 4), int_at(a, 5), int_at(a, 6), int_at(a, 7), int_at(a, 8),
                                           int_at(a, 9), a[10].toBool()));
  } else if (name == "torchvision::roi_pool") {
    auto [output, argmax] = roi_pool(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), int_at(a, 3), int_at(a, 4));
    stack->emplace_back(std::move(output));
    stack->emplace_back(std::move(argmax));
  } else {  // _roi_pool_backward
    stack->emplace_back(roi_pool_backward(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), a[3].toDouble(),
                                          int_at(a, 4), int_at(a, 5), int_at(a, 6), int_at(a, 7), int_at(a, 8),
                                          int_at(a, 9)));
  }
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torch_mlu, m) {
  for (const auto& [name, schema] : kTorchvisionSchemas) m.def(schema);
}

TORCH_LIBRARY_IMPL(torch_mlu, PrivateUse1, m) {
  m.impl("nms", TORCH_FN(nms));
  m.impl("roi_align", TORCH_FN(roi_align));
  m.impl("_roi_align_backward", TORCH_FN(roi_align_backward));
  m.impl("roi_pool", TORCH_FN(roi_pool));
  m.impl("_roi_pool_backward", TORCH_FN(roi_pool_backward));
}

TORCH_LIBRARY_IMPL(torch_mlu, CPU, m) {
  m.impl("nms", TORCH_FN(nms));
  m.impl("roi_align", TORCH_FN(roi_align));
  m.impl("_roi_align_backward", TORCH_FN(roi_align_backward));
  m.impl("roi_pool", TORCH_FN(roi_pool));
  m.impl("_roi_pool_backward", TORCH_FN(roi_pool_backward));
}

TORCH_LIBRARY_IMPL(torchvision, PrivateUse1, m) {
  const auto kernel = [] { return torch::CppFunction::makeFromBoxedFunction<&torchvision_kernel>(); };
  m.impl("nms", kernel());
  m.impl("roi_align", kernel());
  m.impl("_roi_align_backward", kernel());
  m.impl("roi_pool", kernel());
  m.impl("_roi_pool_backward", kernel());
}

}  // namespace torch_mlu
