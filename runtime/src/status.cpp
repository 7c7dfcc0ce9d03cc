#include "mlu_runtime/status.h"

#include <string>

#include "error_state.h"

namespace mlu {
namespace {
thread_local std::string last_detail;
}

namespace detail {
mluError_t fail(mluError_t code, std::string detail) {
  last_detail = std::move(detail);
  return code;
}
}  // namespace detail

const char* mluGetErrorName(mluError_t error) {
  switch (error) {
    case mluSuccess: return "mluSuccess";
    case mluErrorInvalidValue: return "mluErrorInvalidValue";
    case mluErrorInvalidDevice: return "mluErrorInvalidDevice";
    case mluErrorMemoryAllocation: return "mluErrorMemoryAllocation";
    case mluErrorInvalidDevicePointer: return "mluErrorInvalidDevicePointer";
    case mluErrorInvalidResourceHandle: return "mluErrorInvalidResourceHandle";
    case mluErrorNotReady: return "mluErrorNotReady";
    case mluErrorLaunchFailure: return "mluErrorLaunchFailure";
    case mluErrorInvalidMemcpyDirection: return "mluErrorInvalidMemcpyDirection";
    case mluErrorNotSupported: return "mluErrorNotSupported";
    case mluErrorInitialization: return "mluErrorInitialization";
    case mluErrorForkedChild: return "mluErrorForkedChild";
    case mluErrorStreamCaptureUnsupported: return "mluErrorStreamCaptureUnsupported";
    case mluErrorStreamCaptureInvalidated: return "mluErrorStreamCaptureInvalidated";
    case mluErrorStreamCaptureUnjoined: return "mluErrorStreamCaptureUnjoined";
    case mluErrorStreamCaptureWrongThread: return "mluErrorStreamCaptureWrongThread";
  }
  return "mluErrorUnknown";
}

const char* mluGetErrorString(mluError_t error) {
  switch (error) {
    case mluSuccess: return "no error";
    case mluErrorInvalidValue: return "invalid argument";
    case mluErrorInvalidDevice: return "invalid device ordinal";
    case mluErrorMemoryAllocation: return "out of memory";
    case mluErrorInvalidDevicePointer: return "invalid device pointer";
    case mluErrorInvalidResourceHandle: return "invalid resource handle";
    case mluErrorNotReady: return "device not ready";
    case mluErrorLaunchFailure: return "device task failed";
    case mluErrorInvalidMemcpyDirection: return "invalid copy direction";
    case mluErrorNotSupported: return "operation not supported";
    case mluErrorInitialization: return "initialization error";
    case mluErrorForkedChild: return "the runtime cannot be used in a forked child";
    case mluErrorStreamCaptureUnsupported: return "operation not permitted when a queue is capturing";
    case mluErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case mluErrorStreamCaptureUnjoined: return "capture had queues not joined back to the origin queue";
    case mluErrorStreamCaptureWrongThread: return "capture ended from a thread other than the one that began it";
  }
  return "unknown error";
}

const char* mluGetLastErrorDetail() { return last_detail.c_str(); }

}  // namespace mlu
