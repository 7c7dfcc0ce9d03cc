"""CUDA and NCCL environment variables, carried over to their mlu names.

Outside the gpu_migration package, so that the offline converter (gpu2mlu) can read the names without
importing the package, whose import applies the runtime migration. A CUDA variable that is set is copied to its
mlu name unless that name is set already (an explicit mlu setting wins). Variables with no mlu meaning are listed
in one warning. The device configuration is read at the first device call, so this works when gpu_migration is
imported before any mlu work (MLU_VISIBLE_DEVICES read later than that is not seen, as for CUDA_VISIBLE_DEVICES
after cuInit).
"""
import os

# CUDA / NCCL name -> mlu name (those the runtime, allocator and cncl read).
MAPPED = {
    "CUDA_VISIBLE_DEVICES": "MLU_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING": "MLU_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF": "PYTORCH_MLU_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING": "PYTORCH_NO_MLU_MEMORY_CACHING",
    "NCCL_DEBUG": "CNCL_DEBUG",
    "TORCH_NCCL_BLOCKING_WAIT": "TORCH_CNCL_BLOCKING_WAIT",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "TORCH_CNCL_ASYNC_ERROR_HANDLING",
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "TORCH_CNCL_AVOID_RECORD_STREAMS",
    "TORCH_NCCL_DEBUG": "TORCH_CNCL_DEBUG",
    "NCCL_BLOCKING_WAIT": "TORCH_CNCL_BLOCKING_WAIT",
    "NCCL_ASYNC_ERROR_HANDLING": "TORCH_CNCL_ASYNC_ERROR_HANDLING",
    "TORCH_NCCL_ENABLE_MONITORING": "TORCH_CNCL_ENABLE_MONITORING",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC",
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "TORCH_CNCL_TRACE_BUFFER_SIZE",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "TORCH_CNCL_DUMP_ON_TIMEOUT",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "TORCH_CNCL_DEBUG_INFO_TEMP_FILE",
    "TORCH_NCCL_DESYNC_DEBUG": "TORCH_CNCL_DESYNC_DEBUG",
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "TORCH_CNCL_WAIT_TIMEOUT_DUMP_MILSEC",
    "NCCL_SOCKET_IFNAME": "CNCL_SOCKET_IFNAME",
    "NCCL_SHM_DISABLE": "CNCL_SHM_DISABLE",
}

# Read by CUDA, cuBLAS, cuDNN or NCCL and meaningless for the software MLU: ignored, with a warning.
UNSUPPORTED = (
    "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_CACHE_PATH", "CUDA_CACHE_DISABLE", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE", "CUDNN_LOGINFO_DBG", "CUDNN_LOGDEST_DBG",
    "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT", "PYTORCH_NVML_BASED_CUDA_CHECK", "PYTORCH_CUDA_FUSER_DISABLE",
    "NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
    "NCCL_NET_GDR_LEVEL", "NCCL_ALGO", "NCCL_PROTO", "NCCL_NTHREADS", "NCCL_BUFFSIZE", "NCCL_TREE_THRESHOLD",
    "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NVLS_ENABLE", "TORCH_NCCL_HIGH_PRIORITY",
    "TORCH_NCCL_USE_COMM_NONBLOCKING",
)


def migrate_environment(environ=os.environ):
    """Copies mapped variables; returns (names set here, unsupported names that are set)."""
    copied = []
    for cuda_name, mlu_name in MAPPED.items():
        if cuda_name in environ and mlu_name not in environ:
            environ[mlu_name] = environ[cuda_name]
            copied.append(mlu_name)
    ignored = [name for name in UNSUPPORTED if name in environ]
    return copied, ignored
