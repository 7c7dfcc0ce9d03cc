// The quantized matrix products of LLM inference on mlu
// (mlu_kernels/quantized_gemm.h): weight-only int8 (_weight_int8pack_mm),
// weight-only int4 in the CPU's packing (_convert_weight_to_int4pack_for_cpu,
// _weight_int4pack_mm_for_cpu) and in CUDA's (_convert_weight_to_int4pack,
// _weight_int4pack_mm), int8 x int8 -> int32 (_int_mm), and the dynamically
// quantised int4 product (_dyn_quant_pack_4bit_weight,
// _dyn_quant_matmul_4bit). Checks and texts are the CPU's kernels' (CUDA's
// for the CUDA-only pair), plus the bounds the CPU leaves unchecked and then
// reads past (a short qScaleAndZeros, an input narrower than in_features).
//
// Note [int4 packing follows the host CPU]
// The CPU's _convert_weight_to_int4pack_for_cpu packs for the vector width
// of the ATen kernels it runs (ATEN_CPU_CAPABILITY: AVX-512, AVX2 or none;
// quantized_gemm.h's Int4Layout). mlu packs exactly as the CPU of the host
// does, so a weight packed on either side moves to the other with .to() and
// gives the same products; the tests compare the bytes.
#include <ATen/Version.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <mlu_kernels/quantized_gemm.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"
#include "csrc/aten/KernelArgs.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;
using T = const at::Tensor&;

bool is_weight_only_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }

// Note [int4 packing follows the host CPU]
k::Int4Layout host_int4_layout() {
  const std::string capability = at::get_cpu_capability();
  return capability == "AVX512" ? k::Int4Layout::Halves64
         : capability == "AVX2" ? k::Int4Layout::Halves32
                                : k::Int4Layout::Pairs;
}

void check_group_size(const char* op, int64_t k, int64_t group_size) {
  TORCH_CHECK(group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256, op,
              ": expect qGroupSize to be 32, 64, 128 or 256, got ", group_size);
  TORCH_CHECK(k % group_size == 0, op, ": expect K to be divisible by qGroupSize, got K:", k,
              ", qGroupSize:", group_size);
}

void check_scale_zeros(const char* op, T a, T scale_zeros, int64_t n, int64_t k, int64_t group_size) {
  TORCH_CHECK(scale_zeros.dim() == 3 && scale_zeros.size(1) == n && scale_zeros.size(2) == 2, op,
              ": expect qScaleAndZeros to be 3d tensor with sizes [:, ", n, ", 2]");
  TORCH_CHECK(scale_zeros.size(0) >= k / group_size, op, ": expect qScaleAndZeros.size(0) to be at least K / ",
              "qGroupSize = ", k / group_size, ", got ", scale_zeros.size(0));
  TORCH_CHECK(scale_zeros.scalar_type() == a.scalar_type(), "expected scalar type ", a.scalar_type(), " but found ",
              scale_zeros.scalar_type());
}

// C = A W^T through the int4 kernel, W packed in `layout` (n x k/2 bytes).
at::Tensor int4_product(T a_in, const at::Tensor& w, k::Int4Layout layout, int64_t group_size, T scale_zeros_in,
                        int64_t n) {
  const at::Tensor a = a_in.contiguous();
  const at::Tensor sz = scale_zeros_in.contiguous();
  at::Tensor c = at::empty({a.size(0), n}, a.options());
  if (c.numel() == 0) return c;
  k::Int4WeightGemmArgs args{};
  args.dtype = require_kernel_dtype(a.scalar_type(), "_weight_int4pack_mm");
  args.m = a.size(0);
  args.n = n;
  args.k = a.size(1);
  args.a = device_ptr<const void>(a);
  args.lda = a.size(1);
  args.w = device_ptr<const uint8_t>(w);
  args.layout = layout;
  args.group_size = group_size;
  args.scale_zeros = device_ptr<const void>(sz);
  args.c = device_ptr<void>(c);
  args.ldc = n;
  launch_kernel(a.device().index(), "int4_weight_gemm", [=] { k::int4_weight_gemm(args); });
  return c;
}

at::Tensor weight_int8pack_mm_mlu(T a, T w, T scales) {
  constexpr const char* op = "_weight_int8pack_mm_mlu";
  check_same_device("_weight_int8pack_mm", {a, w, scales});
  TORCH_CHECK(is_weight_only_dtype(a.scalar_type()), op, " : expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(a.dim() == 2, op, " : expect A to be 2D tensor.");
  TORCH_CHECK(a.stride(1) == 1 || a.size(1) <= 1, op, " : A must be contiguous on the last dimension.");
  TORCH_CHECK(w.scalar_type() == at::kChar, op, " : expect B to be int8 tensor.");
  TORCH_CHECK(w.is_contiguous(), op, " : expect B to be contiguous.");
  TORCH_CHECK(w.dim() == 2 && w.size(1) == a.size(1), op, " : expect B to be 2D tensor of K = ", a.size(1),
              " columns, got sizes ", w.sizes());
  const int64_t n = w.size(0);
  TORCH_CHECK(scales.dim() == 1 && scales.size(0) == n, op, " : expect scales to be 1d tensor with size ", n);
  TORCH_CHECK(scales.scalar_type() == a.scalar_type(), "expected scalar type ", a.scalar_type(), " but found ",
              scales.scalar_type());
  c10::DeviceGuard guard(a.device());
  const at::Tensor rows = a.stride(1) == 1 ? a : a.contiguous();
  const at::Tensor s = scales.contiguous();
  at::Tensor c = at::empty({a.size(0), n}, a.options());
  if (c.numel() == 0) return c;
  k::Int8WeightGemmArgs args{};
  args.dtype = require_kernel_dtype(a.scalar_type(), "_weight_int8pack_mm");
  args.m = a.size(0);
  args.n = n;
  args.k = a.size(1);
  args.a = device_ptr<const void>(rows);
  args.lda = a.size(0) > 1 ? rows.stride(0) : a.size(1);
  args.w = device_ptr<const int8_t>(w);
  args.scales = device_ptr<const void>(s);
  args.c = device_ptr<void>(c);
  args.ldc = n;
  launch_kernel(a.device().index(), "int8_weight_gemm", [=] { k::int8_weight_gemm(args); });
  return c;
}

at::Tensor convert_weight_to_int4pack_for_cpu_mlu(T weight, int64_t /*innerKTiles: unused, as on the CPU*/) {
  constexpr const char* op = "_convert_weight_to_int4pack_mlu";
  TORCH_CHECK(weight.dim() == 2, op, " : expect weight to be 2D tensor.");
  TORCH_CHECK(weight.scalar_type() == at::kInt, op, " : expect weight to be kInt.");
  const int64_t n = weight.size(0), kk = weight.size(1);
  TORCH_CHECK(n % 16 == 0, op, " : expect N to be dividable by 16");
  TORCH_CHECK(kk % 2 == 0, op, ": expect K to be dividable by 2");
  c10::DeviceGuard guard(weight.device());
  const at::Tensor values = weight.contiguous();
  at::Tensor packed = at::empty({n, kk / 2}, weight.options().dtype(at::kByte));
  if (packed.numel() == 0) return packed;
  const int32_t* v = device_ptr<const int32_t>(values);
  uint8_t* out = device_ptr<uint8_t>(packed);
  const k::Int4Layout layout = host_int4_layout();
  launch_kernel(weight.device().index(), "int4_pack", [=] { k::int4_pack(v, n, kk, layout, out); });
  return packed;
}

at::Tensor weight_int4pack_mm_for_cpu_mlu(T a, T w, int64_t group_size, T scale_zeros) {
  constexpr const char* op = "_weight_int4pack_mm_mlu";
  check_same_device("_weight_int4pack_mm_for_cpu", {a, w, scale_zeros});
  TORCH_CHECK(is_weight_only_dtype(a.scalar_type()), op, " : expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(a.is_contiguous(), op, " : expect A to be contiguous.");
  TORCH_CHECK(a.dim() == 2, op, " : expect A to be 2D tensor.");
  TORCH_CHECK(w.scalar_type() == at::kByte, op, " : expect B to be uint8 tensor.");
  TORCH_CHECK(w.is_contiguous(), op, " : expect B to be contiguous.");
  const int64_t kk = a.size(1);
  TORCH_CHECK(w.dim() == 2 && w.size(1) * 2 == kk, op, " : expect B.size(1) to be K/2 = ", kk / 2, ", got sizes ",
              w.sizes());
  const int64_t n = w.size(0);
  TORCH_CHECK(n % 16 == 0, op, " : expect N to be dividable by 16, got ", n);
  check_group_size(op, kk, group_size);
  check_scale_zeros(op, a, scale_zeros, n, kk, group_size);
  c10::DeviceGuard guard(a.device());
  return int4_product(a, w, host_int4_layout(), group_size, scale_zeros, n);
}

// CUDA's pair (Note [The tinygemm layout] in the kernels).
bool valid_inner_k_tiles(int64_t t) { return t == 2 || t == 4 || t == 8; }

at::Tensor convert_weight_to_int4pack_mlu(T weight, int64_t inner_k_tiles) {
  constexpr const char* op = "_convert_weight_to_int4pack";
  TORCH_CHECK(weight.dim() == 2, op, ": expect weight to be 2D tensor, got ", weight.dim(), "D");
  TORCH_CHECK(weight.scalar_type() == at::kByte, op, ": expect weight to be uint8 (two 4-bit values a byte), got ",
              weight.scalar_type());
  TORCH_CHECK(valid_inner_k_tiles(inner_k_tiles), op, ": expect innerKTiles to be 2, 4 or 8, got ", inner_k_tiles);
  const int64_t n = weight.size(0), kk = weight.size(1) * 2;
  TORCH_CHECK(n % 8 == 0, op, ": expect N to be a multiple of 8, got ", n);
  TORCH_CHECK(kk % (inner_k_tiles * 16) == 0, op, ": expect K = ", kk,
              " to be a multiple of innerKTiles * 16 = ", inner_k_tiles * 16);
  c10::DeviceGuard guard(weight.device());
  const at::Tensor bytes = weight.contiguous();
  at::Tensor packed =
      at::empty({n / 8, kk / (inner_k_tiles * 16), 32, inner_k_tiles / 2}, weight.options().dtype(at::kInt));
  if (packed.numel() == 0) return packed;
  const uint8_t* in = device_ptr<const uint8_t>(bytes);
  int32_t* out = device_ptr<int32_t>(packed);
  launch_kernel(weight.device().index(), "int4_pack_tinygemm",
                [=] { k::int4_pack_tinygemm(in, n, kk, inner_k_tiles, out); });
  return packed;
}

at::Tensor weight_int4pack_mm_mlu(T a, T w, int64_t group_size, T scale_zeros) {
  constexpr const char* op = "_weight_int4pack_mm";
  check_same_device(op, {a, w, scale_zeros});
  TORCH_CHECK(is_weight_only_dtype(a.scalar_type()), op, ": expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(a.dim() == 2, op, ": expect A to be 2D tensor.");
  TORCH_CHECK(w.scalar_type() == at::kInt && w.dim() == 4, op,
              ": expect B to be a 4D int32 tensor (_convert_weight_to_int4pack's), got ", w.dim(), "D ",
              w.scalar_type());
  TORCH_CHECK(w.is_contiguous(), op, ": expect B to be contiguous.");
  const int64_t inner_k_tiles = w.size(3) * 2, kk = a.size(1), n = w.size(0) * 8;
  TORCH_CHECK(valid_inner_k_tiles(inner_k_tiles) && w.size(2) == 32 && kk % (inner_k_tiles * 16) == 0 &&
                  w.size(1) == kk / (inner_k_tiles * 16),
              op, ": expect B of sizes [N/8, K/(innerKTiles*16), 32, innerKTiles/2] with K = ", kk,
              " and innerKTiles 2, 4 or 8, got ", w.sizes());
  check_group_size(op, kk, group_size);
  check_scale_zeros(op, a, scale_zeros, n, kk, group_size);
  c10::DeviceGuard guard(a.device());
  // The host layout, converted on the device in queue order.
  at::Tensor host = at::empty({n, kk / 2}, w.options().dtype(at::kByte));
  if (host.numel() > 0) {
    const int32_t* in = device_ptr<const int32_t>(w);
    uint8_t* out = device_ptr<uint8_t>(host);
    const k::Int4Layout layout = host_int4_layout();
    launch_kernel(a.device().index(), "int4_repack_tinygemm", [=] {
      std::vector<int32_t> values(static_cast<size_t>(n * kk));
      k::int4_unpack_tinygemm(in, n, kk, inner_k_tiles, values.data());
      k::int4_pack(values.data(), n, kk, layout, out);
    });
  }
  return int4_product(a, host, host_int4_layout(), group_size, scale_zeros, n);
}

// Inductor lowers _weight_int4pack_mm_for_cpu to quantized::int4mm_packed_weight_cpu
// (torch/_inductor/quantized_lowerings.py), the group size a 0-dim int64 tensor constant.
at::Tensor int4mm_packed_weight_mlu(T a, T w, T group_size, T scale_zeros) {
  TORCH_CHECK(group_size.numel() == 1 && !at::isFloatingType(group_size.scalar_type()),
              "int4mm_packed_weight_cpu: expect qGroupSize to be a one-element integer tensor, got ",
              group_size.scalar_type(), " of ", group_size.numel(), " elements");
  return weight_int4pack_mm_for_cpu_mlu(a, w, group_size.item<int64_t>(), scale_zeros);
}

void check_int_mm(T a, T b) {
  constexpr const char* op = "int_mm_out_mlu";
  TORCH_CHECK(a.dim() == 2, op, ": Expected self to be of dimension 2 but got ", a.dim());
  TORCH_CHECK(b.dim() == 2, op, ": Expected mat2 to be of dimension 2 but got ", b.dim());
  TORCH_CHECK(a.size(1) == b.size(0), op, ": self.size(1) needs to match mat2.size(0) but got ", a.size(1), " and ",
              b.size(0));
  TORCH_CHECK(a.scalar_type() == at::kChar || a.scalar_type() == at::kByte, op,
              ": Expected self dtype to be int8 or uint8 but got ", a.scalar_type());
  TORCH_CHECK(b.scalar_type() == at::kChar, op, ": Expected mat2 dtype to be of type int8 but got ", b.scalar_type());
}

at::Tensor& int_mm_out_mlu(T a, T b, at::Tensor& out) {
  check_same_device("_int_mm", {a, b, out});
  check_int_mm(a, b);
  TORCH_CHECK(out.scalar_type() == at::kInt, "int_mm_out_mlu: Expected result dtype to be of type kInt but got ",
              out.scalar_type());
  c10::DeviceGuard guard(a.device());
  const int64_t m = a.size(0), n = b.size(1);
  at::native::resize_output(out, {m, n});
  TORCH_CHECK(out.is_contiguous(), "int_mm_out_mlu: Expected result to be contiguous.");
  if (out.numel() == 0) return out;
  k::Int8GemmArgs args{};
  args.a_dtype = a.scalar_type() == at::kByte ? k::ScalarType::UInt8 : k::ScalarType::Int8;
  args.m = m;
  args.n = n;
  args.k = a.size(1);
  args.a = device_ptr<const void>(a);
  args.a_rs = a.stride(0);
  args.a_cs = a.stride(1);
  args.b = device_ptr<const int8_t>(b);
  args.b_rs = b.stride(0);
  args.b_cs = b.stride(1);
  args.c = device_ptr<int32_t>(out);
  args.ldc = n;
  launch_kernel(a.device().index(), "int8_gemm", [=] { k::int8_gemm(args); });
  return out;
}

at::Tensor int_mm_mlu(T a, T b) {
  check_same_device("_int_mm", {a, b});
  check_int_mm(a, b);
  at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options().dtype(at::kInt));
  return int_mm_out_mlu(a, b, out);
}

void check_dyn_quant_block(const char* op, int64_t block_size, int64_t in_features) {
  TORCH_CHECK(block_size == in_features || (block_size % 32 == 0 && in_features % block_size == 0), op,
              ": Group size should be multiple of 32, in_features [", in_features, "]. Provided ", block_size);
}

// Without KleidiAI the CPU's packed buffer is the float32 concatenation of
// the 4-bit bytes, the scales and the bias (Note [Dynamic int4 quantisation]).
at::Tensor dyn_quant_pack_4bit_weight_mlu(T weights, T scales_zeros, const std::optional<at::Tensor>& bias,
                                          int64_t block_size, int64_t in_features, int64_t out_features) {
  constexpr const char* op = "_dyn_quant_pack_4bit_weight_mlu";
  TORCH_CHECK(weights.scalar_type() == at::kByte, op, " : expect weight to be kByte.");
  check_dyn_quant_block(op, block_size, in_features);
  TORCH_CHECK(weights.numel() == out_features * in_features / 2, op, " : expect weight to hold out_features * ",
              "in_features / 2 = ", out_features * in_features / 2, " bytes, got ", weights.numel());
  TORCH_CHECK(scales_zeros.numel() == out_features * (in_features / block_size), op, " : expect ",
              out_features * (in_features / block_size), " scales, got ", scales_zeros.numel());
  TORCH_CHECK(!bias.has_value() || bias->numel() == out_features, op, " : expect bias of ", out_features,
              " elements, got ", bias.has_value() ? bias->numel() : 0);
  c10::DeviceGuard guard(weights.device());
  std::vector<at::Tensor> parts{weights.reshape(-1).to(at::kFloat), scales_zeros.reshape(-1).to(at::kFloat)};
  if (bias.has_value()) parts.push_back(bias->reshape(-1).to(at::kFloat));
  return at::cat(parts, 0);
}

at::Tensor dyn_quant_matmul_4bit_mlu(T input, T packed, int64_t block_size, int64_t in_features, int64_t out_features) {
  constexpr const char* op = "_dyn_quant_matmul_4bit_mlu";
  check_same_device("_dyn_quant_matmul_4bit", {input, packed});
  TORCH_CHECK(input.scalar_type() == at::kFloat || input.scalar_type() == at::kBFloat16, op,
              " : expect input to be float32 or bfloat16 tensor.");
  TORCH_CHECK(input.dim() == 2 && input.size(1) == in_features, op,
              " : expect input to be 2D with in_features = ", in_features, " columns, got sizes ", input.sizes());
  check_dyn_quant_block(op, block_size, in_features);
  TORCH_CHECK(input.scalar_type() == at::kFloat || block_size == in_features, op,
              " : bfloat16 input takes channelwise weights (block_size == in_features) only");
  TORCH_CHECK(packed.dim() == 1 && packed.scalar_type() == at::kFloat, op,
              " : expect packed_weights to be _dyn_quant_pack_4bit_weight's 1-D float32 tensor");
  const int64_t n = out_features, kk = in_features, weight_elements = n * kk / 2;
  const int64_t scale_elements = n * (kk / block_size);
  const int64_t extra = packed.numel() - weight_elements - scale_elements;
  TORCH_CHECK(extra == 0 || extra == n, "Invalid packed weight tensor size");
  c10::DeviceGuard guard(input.device());
  const at::Tensor a = input.contiguous();
  const at::Tensor w = packed.narrow(0, 0, weight_elements).to(at::kByte);
  const at::Tensor scales = packed.narrow(0, weight_elements, scale_elements).contiguous();
  const at::Tensor bias = extra > 0 ? packed.narrow(0, weight_elements + scale_elements, n).contiguous() : at::Tensor();
  at::Tensor c = at::empty({a.size(0), n}, a.options());
  if (c.numel() == 0) return c;
  k::DynQuantInt4GemmArgs args{};
  args.dtype = a.scalar_type() == at::kBFloat16 ? k::ScalarType::BFloat16 : k::ScalarType::Float32;
  args.m = a.size(0);
  args.n = n;
  args.k = kk;
  args.block_size = block_size;
  args.a = device_ptr<const void>(a);
  args.w = device_ptr<const uint8_t>(w);
  args.scales = device_ptr<const float>(scales);
  args.bias = bias.defined() ? device_ptr<const float>(bias) : nullptr;
  args.c = device_ptr<void>(c);
  launch_kernel(input.device().index(), "dyn_quant_int4_gemm", [=] { k::dyn_quant_int4_gemm(args); });
  return c;
}

}  // namespace
}  // namespace torch_mlu

TORCH_LIBRARY_IMPL(quantized, PrivateUse1, m) {
  m.impl("int4mm_packed_weight_cpu", TORCH_FN(torch_mlu::int4mm_packed_weight_mlu));
}

// The aten registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/QuantizedOps.inc"
