// Convolution (1-, 2- and 3-D, grouped, strided, padded, dilated) and its
// backward ops, as GEMMs over unfolded patches (im2col / col2im).
//
// Tensors are contiguous: input [N, C_in, *in_size], weight [C_out,
// C_in / groups, *kernel], output [N, C_out, *out_size], all of one dtype
// (a dtype gemm_supports). For one sample and group, the patches of the input
// unfold into a (C_in / groups * prod(kernel)) x prod(out_size) matrix
// (a view of the input for 1x1 kernels with stride 1 and no padding), and
//   output = weight x patches (+ bias),
//   grad_patches = weight^T x grad_output, folded back (summed) into grad_input,
//   grad_weight = sum over samples of grad_output x patches^T,
// the last as one GEMM over all samples (depth N * prod(out_size)), so
// Float16/BFloat16 results are rounded once. A transposed convolution is the
// backward-input op of the convolution it transposes, and vice versa.
#pragma once

#include <cstdint>

#include "mlu_kernels/dtype.h"

namespace mlu::kernels {

struct ConvShape {
  int dims = 2;  // spatial dims, 1..3
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  int64_t in_size[3] = {1, 1, 1}, out_size[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
};

// conv_forward and conv_backward_input also take the integer dtypes (not
// Bool), computing in the element type and wrapping on overflow as the CPU's
// integer convolutions do; the others and the channels-last ones are floating
// only.

// output = conv(input, weight) + bias (bias [C_out] or nullptr).
void conv_forward(const ConvShape& shape, ScalarType type, const void* input, const void* weight, const void* bias,
                  void* output);

// grad_input (overwritten) from grad_output [N, C_out, *out_size], plus
// bias[c] on every element of channel c unless bias is nullptr (a transposed
// convolution's bias, added before the one rounding of Float16/BFloat16).
void conv_backward_input(const ConvShape& shape, ScalarType type, const void* grad_output, const void* weight,
                         const void* bias, void* grad_input);

// A Float16 / BFloat16 transposed convolution summed and rounded as the
// CPU does it (Note [16-bit transposed convolution as the CPU sums it] in
// conv.cpp): `shape` is the regular convolution from `output` to `input`,
// as for conv_backward_input, and so are the arguments.
enum class TransposedSums16 {
  onednn,      // oneDNN's deconvolution: channel pairs, float sums, bias, one rounding
  slow,        // slow_conv_transpose: sequential channels, rounded columns and adds, bias rounded
  slow_pairs,  // the same with its BFloat16 GEMM on oneDNN: channel pairs
};
void conv_transpose_16bit(const ConvShape& shape, ScalarType type, TransposedSums16 sums, const void* input,
                          const void* weight, const void* bias, void* output);

// grad_weight (overwritten) and, unless nullptr, grad_bias [C_out]
// (overwritten: the sum of grad_output over samples and positions).
void conv_backward_weight(const ConvShape& shape, ScalarType type, const void* grad_output, const void* input,
                          void* grad_weight, void* grad_bias);

// Channels-last convolutions without groups: input [N, *in_size, C_in],
// weight [C_out, *kernel, C_in], output [N, *out_size, C_out], each
// contiguous in that order (Note [Channels-last convolution] in
// conv_nhwc.cpp). Same results as the ops above up to the order of sums.
// Float64 works in double; Float16/BFloat16 in float, rounded once.
void conv_forward_channels_last(const ConvShape& shape, ScalarType type, const void* input, const void* weight,
                                const void* bias, void* output);
void conv_backward_input_channels_last(const ConvShape& shape, ScalarType type, const void* grad_output,
                                       const void* weight, void* grad_input);
void conv_backward_weight_channels_last(const ConvShape& shape, ScalarType type, const void* grad_output,
                                        const void* input, void* grad_weight, void* grad_bias);

// F.unfold / F.fold (PyTorch's im2col / col2im), per sample: input [N, C,
// *in_size] <-> columns [N, C * prod(kernel), prod(out_size)], row
// c * prod(kernel) + tap (C = in_channels; out_channels, groups unused).
// unfold copies (any dtype; padding gives zeros); fold sums the overlapping
// patches (floating dtypes; Float16/BFloat16 in float, rounded once).
void unfold(const ConvShape& shape, ScalarType type, const void* input, void* columns);
void fold(const ConvShape& shape, ScalarType type, const void* columns, void* output);

// The library float32 and bfloat16 convolutions run on: oneDNN where this
// build links it (Note [oneDNN convolutions] in src/conv/conv_dnnl.h; the
// default there, MLU_KERNELS_CONV=own picks ours) or our own kernels (every
// dtype; the only ones in builds without oneDNN). Not while convolutions run.
enum class ConvLibrary : int { Own = 0, Dnnl = 1 };
bool conv_library_available(ConvLibrary library);
ConvLibrary conv_library();
void set_conv_library(ConvLibrary library);
const char* conv_library_name(ConvLibrary library);
// Whether convolutions of this dtype run on oneDNN now (which takes both
// layouts at full speed; our own kernels favour channels-last for small
// outputs).
bool conv_library_takes(ScalarType type);

// Scalar references: direct loops over every output and kernel position,
// sums in long double.
void conv_forward_ref(const ConvShape& shape, ScalarType type, const void* input, const void* weight,
                      const void* bias, void* output);
void conv_backward_input_ref(const ConvShape& shape, ScalarType type, const void* grad_output, const void* weight,
                             const void* bias, void* grad_input);
void conv_backward_weight_ref(const ConvShape& shape, ScalarType type, const void* grad_output, const void* input,
                              void* grad_weight, void* grad_bias);

}  // namespace mlu::kernels
