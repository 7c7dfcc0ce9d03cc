// mlu_ext::muladd(a, b, c) = a * b + c: a custom op with an mlu kernel, out of tree.
//
// What it shows (docs/extending.md):
//  - TORCH_LIBRARY defines the op; TORCH_LIBRARY_IMPL gives it kernels per dispatch key: PrivateUse1 (mlu),
//    CPU (the oracle the tests compare with), Meta (shapes only, which is all torch.compile's fake tensors
//    need), and Autograd (its derivative).
//  - The mlu kernel allocates its output on the device, then launches host code on the current mlu stream
//    (torch_mlu::launch_kernel); the code runs later, in order with the stream's other work, on the
//    device's compute cores (mlu::kernels::parallel_for).
// The same file builds with setup.py (MLUExtension) and with load_inline.
#include <torch/extension.h>

#include <csrc/torch_mlu.h>

namespace mlu_ext {

void check_inputs(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sym_sizes() == b.sym_sizes(), "muladd: a and b must have the same shape, got ", a.sym_sizes(),
              " and ", b.sym_sizes());
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "muladd: expected float32 tensors, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), "muladd: a and b must be on the same device, got ", a.device(), " and ",
              b.device());
}

at::Tensor muladd_mlu(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs(a, b);
  torch_mlu::MLUGuard device_guard(a.device());  // allocate and launch on a's device
  const at::Tensor x = a.contiguous();
  const at::Tensor y = b.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  // Raw pointers only, as the device addresses them (device_ptr): the tensors may be freed before the
  // kernel runs; their memory is not reused until the stream has run it.
  const float* xp = torch_mlu::device_ptr<const float>(x);
  const float* yp = torch_mlu::device_ptr<const float>(y);
  float* op = torch_mlu::device_ptr<float>(out);
  const int64_t n = x.numel();
  const float cf = static_cast<float>(c);
  torch_mlu::launch_kernel(torch_mlu::getCurrentMLUStream(), "mlu_ext::muladd", [=] {
    mlu::kernels::parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) op[i] = xp[i] * yp[i] + cf;
    });
  });
  return out;
}

at::Tensor muladd_cpu(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs(a, b);
  return a * b + c;
}

// Shapes and dtypes only, in symbolic sizes so that dynamic shapes work under torch.compile.
at::Tensor muladd_meta(const at::Tensor& a, const at::Tensor& b, double c) {
  check_inputs(a, b);
  return at::empty_symint(a.sym_sizes(), a.options().memory_format(at::MemoryFormat::Contiguous));
}

// d(a*b + c)/da = b, /db = a.
struct MulAdd : public torch::autograd::Function<MulAdd> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                            double c) {
    ctx->save_for_backward({a, b});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("mlu_ext::muladd", "")
                         .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
    return op.call(a, b, c);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {grads[0] * saved[1], grads[0] * saved[0], at::Tensor()};
  }
};

at::Tensor muladd_autograd(const at::Tensor& a, const at::Tensor& b, double c) { return MulAdd::apply(a, b, c); }

TORCH_LIBRARY(mlu_ext, m) {
  m.def("muladd(Tensor a, Tensor b, float c) -> Tensor", {at::Tag::pt2_compliant_tag});
}
TORCH_LIBRARY_IMPL(mlu_ext, PrivateUse1, m) { m.impl("muladd", &muladd_mlu); }
TORCH_LIBRARY_IMPL(mlu_ext, CPU, m) { m.impl("muladd", &muladd_cpu); }
TORCH_LIBRARY_IMPL(mlu_ext, Meta, m) { m.impl("muladd", &muladd_meta); }
TORCH_LIBRARY_IMPL(mlu_ext, Autograd, m) { m.impl("muladd", &muladd_autograd); }

}  // namespace mlu_ext

// An importable module (mlu_ext._C) as well as a library of ops; load_inline names it after its `name`.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}
