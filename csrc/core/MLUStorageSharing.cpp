// See Note [Sharing mlu storages between processes] in MLUStorageSharing.h.
#include "csrc/core/MLUStorageSharing.h"

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <mlu_runtime/device.h>
#include <mlu_runtime/ipc.h>

#include "csrc/core/MLUException.h"
#include "csrc/core/MLUFunctions.h"

namespace torch_mlu {
namespace {

// The context of a shared storage's DataPtr in the process that shared it.
struct SentBlock {
  c10::DataPtr original;  // what the storage had: the caching allocator's block, usually
  size_t nbytes = 0;      // the bytes shared (the storage cannot resize any more)
};

// Blocks whose storages died while another process still had them open.
struct Parked {
  std::mutex mu;
  std::vector<std::unique_ptr<SentBlock>> blocks;
};

Parked& parked() {
  static auto* instance = new Parked();  // never destroyed: storages may die during exit
  return *instance;
}

bool open_elsewhere(const SentBlock& sent) {
  bool in_use = false;
  // A failed query keeps the block: memory is better leaked than handed out twice.
  return mlu::mluIpcMemInUse(sent.original.get(), sent.nbytes, &in_use) != mlu::mluSuccess || in_use;
}

void release_sent(void* context) {
  std::unique_ptr<SentBlock> sent(static_cast<SentBlock*>(context));
  // A forked child leaks what it inherited (Note [Forked children]).
  if (mlu::mluIsForkedChild()) {
    (void)sent.release();
    return;
  }
  // `original` goes back to its allocator here unless another process has it open.
  if (sent->original.get() == nullptr || !open_elsewhere(*sent)) return;
  Parked& p = parked();
  std::lock_guard<std::mutex> lock(p.mu);
  p.blocks.push_back(std::move(sent));
}

// Deleters cannot report errors; a failed close leaves the mapping until exit.
void close_opened(void* ptr) { (void)mlu::mluIpcCloseMemHandle(ptr); }

bool is_shared(const c10::DataPtr& data) {
  return data.get_deleter() == &release_sent || data.get_deleter() == &close_opened;
}

std::mutex& sharing_mutex() {  // two threads sharing one storage (two Queue feeders) wrap it once
  static std::mutex mu;
  return mu;
}

}  // namespace

bool collect_shared_blocks() {
  std::vector<std::unique_ptr<SentBlock>> done;
  {
    Parked& p = parked();
    std::lock_guard<std::mutex> lock(p.mu);
    for (auto it = p.blocks.begin(); it != p.blocks.end();) {
      if (open_elsewhere(**it)) {
        ++it;
      } else {
        done.push_back(std::move(*it));
        it = p.blocks.erase(it);
      }
    }
  }
  const bool freed = !done.empty();
  done.clear();  // back to the allocator, outside the lock
  return freed;
}

const c10::DataPtr& allocator_data_ptr(const c10::DataPtr& data) {
  if (auto* sent = data.cast_context<SentBlock>(&release_sent)) return sent->original;
  return data;
}

SharedStorageHandle share_storage(const c10::Storage& storage) {
  TORCH_CHECK(storage.device().is_privateuseone(), "share_storage: expected an mlu storage, got one on ",
              storage.device());
  TORCH_CHECK(storage.nbytes() > 0, "share_storage: an empty storage has no memory to share");
  const c10::DeviceIndex device = storage.device().index();
  c10::DeviceGuard guard(storage.device());
  collect_shared_blocks();
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  void* data = impl->mutable_data();
  mlu::mluIpcMemHandle_t handle{};
  // Refuses memory that cannot be shared (the host-access trap, say) before anything changes.
  MLU_CHECK(mlu::mluIpcGetMemHandle(&handle, data));
  TORCH_CHECK(handle.size >= storage.nbytes(), "share_storage: the storage's ", storage.nbytes(),
              " bytes run past the end of the device allocation they start in (", handle.size, " bytes)");
  device_synchronize(device);  // the consumer reads what the queued work writes
  {
    std::lock_guard<std::mutex> lock(sharing_mutex());
    if (!is_shared(impl->data_ptr())) {
      auto* sent = new SentBlock();  // owned by `wrapped` from the next line on
      sent->nbytes = storage.nbytes();
      // Same address: only the owner changes (Note [Sharing mlu storages between processes]).
      c10::DataPtr wrapped(data, sent, &release_sent, storage.device());
      sent->original = impl->set_data_ptr(std::move(wrapped));
      impl->set_resizable(false);
    }
  }
  return {handle.fd, handle.offset, storage.nbytes(), device};
}

c10::Storage open_shared_storage(int fd, size_t offset, size_t nbytes, c10::DeviceIndex device) {
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
  mlu::mluIpcMemHandle_t handle{};
  handle.fd = fd;
  handle.size = nbytes;
  handle.offset = offset;
  void* mapped = nullptr;
  MLU_CHECK(mlu::mluIpcOpenMemHandle(&mapped, handle));
  c10::DataPtr data(mapped, mapped, &close_opened, c10::Device(c10::DeviceType::PrivateUse1, device));
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data), /*allocator=*/nullptr,
                      /*resizable=*/false);
}

}  // namespace torch_mlu
