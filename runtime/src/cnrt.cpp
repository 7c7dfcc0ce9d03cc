// The C interface (mlu_runtime/cnrt.h): each call forwards to its mlu_runtime counterpart.
#include "mlu_runtime/cnrt.h"

#include "mlu_runtime/device.h"
#include "mlu_runtime/memory.h"
#include "mlu_runtime/queue.h"
#include "mlu_runtime/status.h"

extern "C" {

cnrtRet_t cnrtMalloc(void** ptr, size_t bytes) { return mlu::mluMalloc(ptr, bytes); }
cnrtRet_t cnrtFree(void* ptr) { return mlu::mluFree(ptr); }
cnrtRet_t cnrtFreeAsync(void* ptr, cnrtQueue_t queue) { return mlu::mluFreeAsync(ptr, queue); }
cnrtRet_t cnrtGetDevice(int* device) { return mlu::mluGetDevice(device); }
cnrtRet_t cnrtSetDevice(int device) { return mlu::mluSetDevice(device); }
cnrtRet_t cnrtQueueSync(cnrtQueue_t queue) { return mlu::mluQueueSynchronize(queue); }
const char* cnrtGetErrorString(cnrtRet_t ret) { return mlu::mluGetErrorString(static_cast<mlu::mluError_t>(ret)); }

}  // extern "C"
