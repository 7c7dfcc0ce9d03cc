// torch_mlu._C bindings for sharing mlu storages between processes, used by
// torch_mlu/mlu/reductions.py (Note [Sharing mlu storages between processes]).
#include <torch/csrc/Storage.h>

#include "csrc/python/Bindings.h"

#include "csrc/core/MLUStorageSharing.h"

namespace py = pybind11;

namespace torch_mlu {

void bind_storage_sharing(py::module& m) {
  // storage -> (fd, offset, nbytes, device): shares it in place.
  m.def("_mlu_share_storage", [](py::handle storage) {
    return MLU_BINDING({
      TORCH_CHECK_TYPE(THPStorage_Check(storage.ptr()), "_mlu_share_storage: expected a torch.UntypedStorage");
      SharedStorageHandle handle = share_storage(THPStorage_Unpack(storage.ptr()));
      return py::make_tuple(handle.fd, handle.offset, handle.nbytes, handle.device);
    });
  });
  // (fd, offset, nbytes, device) -> torch.UntypedStorage over the same pages.
  m.def("_mlu_new_shared_storage", [](int fd, size_t offset, size_t nbytes, c10::DeviceIndex device) {
    return MLU_BINDING({
      return py::reinterpret_steal<py::object>(THPStorage_Wrap(open_shared_storage(fd, offset, nbytes, device)));
    });
  });
  // torch.mlu.ipc_collect: frees what shared storages left parked; whether anything was.
  m.def("_mlu_ipc_collect", []() { return MLU_BINDING({ return collect_shared_blocks(); }); });
}

}  // namespace torch_mlu
