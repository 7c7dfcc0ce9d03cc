// The process's oneMKL DFTI (Note [Which MKL] in mkl.h): the discrete
// Fourier transform entry points the batched FFT kernels call.
//
// Invariants: the table is returned only when every entry point was found,
// and never changes afterwards. The enumerators below are DFTI's own values
// (mkl_dfti.h), fixed by its ABI. Descriptor calls are C varargs: sizes and
// counts travel as `long` (MKL_LONG on LP64 Linux), configuration values as
// int (DFTI's enums), scales as double.
#pragma once

namespace mlu::kernels::vendor {

using dfti_long = long;  // MKL_LONG
using dfti_handle = void*;  // DFTI_DESCRIPTOR_HANDLE

namespace dfti_enum {
// Configuration parameters (enum DFTI_CONFIG_PARAM).
constexpr int kForwardScale = 4;
constexpr int kBackwardScale = 5;
constexpr int kNumberOfTransforms = 7;
constexpr int kConjugateEvenStorage = 10;
constexpr int kPlacement = 11;
constexpr int kInputStrides = 12;
constexpr int kOutputStrides = 13;
constexpr int kInputDistance = 14;
constexpr int kOutputDistance = 15;
constexpr int kThreadLimit = 27;
// Configuration values (enum DFTI_CONFIG_VALUE).
constexpr int kComplex = 32;
constexpr int kReal = 33;
constexpr int kComplexComplex = 39;
constexpr int kNotInplace = 44;
}  // namespace dfti_enum

struct Dfti {
  // DftiCreateDescriptor_{s,d}_1d(handle*, domain, long n) and
  // DftiCreateDescriptor_{s,d}_md(handle*, domain, long ndim, long* sizes).
  dfti_long (*create_s_1d)(dfti_handle*, int, ...);
  dfti_long (*create_d_1d)(dfti_handle*, int, ...);
  dfti_long (*create_s_md)(dfti_handle*, int, dfti_long, ...);
  dfti_long (*create_d_md)(dfti_handle*, int, dfti_long, ...);
  dfti_long (*set_value)(dfti_handle, int, ...);
  dfti_long (*commit)(dfti_handle);
  // Out of place: (handle, in, out).
  dfti_long (*compute_forward)(dfti_handle, void*, ...);
  dfti_long (*compute_backward)(dfti_handle, void*, ...);
  dfti_long (*free_descriptor)(dfti_handle*);
  char* (*error_message)(dfti_long);
};

// The DFTI entry points, or nullptr where the process has no oneMKL.
const Dfti* dfti();

}  // namespace mlu::kernels::vendor
