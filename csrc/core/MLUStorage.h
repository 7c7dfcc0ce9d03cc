// Resizing the bytes of an mlu storage (untyped_storage().resize_(), and the
// storage growth behind Tensor.resize_ / set_). The old contents are copied
// on the current stream, and the old block is recorded on that stream before
// it is released, so the copy always reads live memory.
#pragma once

#include <c10/core/Storage.h>

namespace torch_mlu {

void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);

}  // namespace torch_mlu
