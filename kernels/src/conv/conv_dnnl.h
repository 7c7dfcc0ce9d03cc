// Convolutions through oneDNN (Debian's libdnnl), where it was found at build
// time and conv_library() picks it.
//
// Note [oneDNN convolutions]
// oneDNN is the library stock PyTorch's CPU convolutions run on: its JIT
// kernels (direct, blocked-layout, AVX-512 / AVX512-BF16 / AMX) beat our
// im2col + GEMM path on every ResNet layer, NCHW and channels-last, float32
// and bfloat16 (docs/bench_conv.md). We call it as we call MKL (Note
// [Vendor BLAS]): oneDNN's own threads never run. Each call is cut into one
// part per compute thread of our pool, by samples or by channels (Note
// [Slices of a convolution] in conv_dnnl.cpp), and each thread runs the
// primitive on its part with oneDNN told to use one thread
// (omp_set_num_threads(1) on that thread: the OpenMP runtime oneDNN is built
// on keeps the count per thread). Weight gradients of a cut by samples are
// computed per part in float and summed in a fixed order, so results do not
// depend on timing, and a 16-bit gradient is rounded once. Our tensors stay
// in their plain layouts (NCHW / channels-last, OIHW / OHWI weights); each
// call reorders them into the blocked layouts oneDNN chose and back, as
// PyTorch's CPU path does.
//
// What oneDNN cannot take (float64, float16 on most CPUs, a 16-bit
// transposed convolution's bias, a primitive it does not implement) makes
// these functions return false, having written nothing, and our own kernel
// runs. Builds without oneDNN (the sanitizer builds, a machine without the
// package) run our kernels everywhere; results agree up to the order of sums.
#pragma once

#include "mlu_kernels/conv.h"

namespace mlu::kernels::detail {

// Whether oneDNN is linked into this build.
bool dnnl_conv_linked();

// The ops of conv.h, `channels_last` picking which of its two layouts the
// tensors are in. false: not taken (see above), nothing written.
bool dnnl_conv_forward(const ConvShape& shape, ScalarType type, bool channels_last, const void* input,
                       const void* weight, const void* bias, void* output);
bool dnnl_conv_backward_input(const ConvShape& shape, ScalarType type, bool channels_last, const void* grad_output,
                              const void* weight, const void* bias, void* grad_input);
bool dnnl_conv_backward_weight(const ConvShape& shape, ScalarType type, bool channels_last, const void* grad_output,
                               const void* input, void* grad_weight, void* grad_bias);

}  // namespace mlu::kernels::detail
