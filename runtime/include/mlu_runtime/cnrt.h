/* A C interface to the runtime, named as Cambricon's CNRT: for code that
 * cannot be C++ (a pluggable allocator's shared library, other languages).
 * Each call is the mlu_runtime call of the same meaning; a cnrtRet_t is that
 * call's mluError_t value (0: success), and cnrtGetErrorString explains it. */
#ifndef MLU_RUNTIME_CNRT_H_
#define MLU_RUNTIME_CNRT_H_

#include <stddef.h>

#ifdef __cplusplus
namespace mlu {
struct mluQueue_st;
}
typedef mlu::mluQueue_st* cnrtQueue_t;
extern "C" {
#else
typedef struct mluQueue_st* cnrtQueue_t;
#endif

typedef int cnrtRet_t;
enum { cnrtSuccess = 0 };

cnrtRet_t cnrtMalloc(void** ptr, size_t bytes);                  /* mluMalloc, current device */
cnrtRet_t cnrtFree(void* ptr);                                   /* mluFree */
cnrtRet_t cnrtFreeAsync(void* ptr, cnrtQueue_t queue);           /* mluFreeAsync */
cnrtRet_t cnrtGetDevice(int* device);                            /* mluGetDevice */
cnrtRet_t cnrtSetDevice(int device);                             /* mluSetDevice */
cnrtRet_t cnrtQueueSync(cnrtQueue_t queue);                      /* mluQueueSynchronize */
const char* cnrtGetErrorString(cnrtRet_t ret);                   /* mluGetErrorString */

#ifdef __cplusplus
}
#endif

#endif /* MLU_RUNTIME_CNRT_H_ */
