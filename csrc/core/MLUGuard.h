// RAII guards for mlu devices and streams, as c10/cuda/CUDAGuard.h has them
// for CUDA: MLUGuard (set the current device, restore it on exit),
// OptionalMLUGuard (the same, possibly for no device), MLUStreamGuard (set
// the current device and its current stream) and OptionalMLUStreamGuard.
// Header-only over MLUGuardImpl, so they cost what a DeviceGuard costs
// without the virtual dispatch. Not copyable or movable, like CUDA's.
#pragma once

#include <optional>

#include <c10/core/impl/InlineDeviceGuard.h>
#include <c10/core/impl/InlineStreamGuard.h>

#include "csrc/core/MLUGuardImpl.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {

struct MLUGuard {
  explicit MLUGuard(c10::DeviceIndex device_index) : guard_(device_index) {}
  explicit MLUGuard(c10::Device device) : guard_(device) {}
  MLUGuard(const MLUGuard&) = delete;
  MLUGuard& operator=(const MLUGuard&) = delete;

  void set_device(c10::Device device) { guard_.set_device(device); }
  void set_index(c10::DeviceIndex device_index) { guard_.set_index(device_index); }
  c10::Device original_device() const { return guard_.original_device(); }
  c10::Device current_device() const { return guard_.current_device(); }

 private:
  c10::impl::InlineDeviceGuard<MLUGuardImpl> guard_;
};

struct OptionalMLUGuard {
  OptionalMLUGuard() = default;
  explicit OptionalMLUGuard(std::optional<c10::Device> device) : guard_(device) {}
  explicit OptionalMLUGuard(std::optional<c10::DeviceIndex> device_index) : guard_(device_index) {}
  OptionalMLUGuard(const OptionalMLUGuard&) = delete;
  OptionalMLUGuard& operator=(const OptionalMLUGuard&) = delete;

  void set_device(c10::Device device) { guard_.set_device(device); }
  void set_index(c10::DeviceIndex device_index) { guard_.set_index(device_index); }
  std::optional<c10::Device> original_device() const { return guard_.original_device(); }
  std::optional<c10::Device> current_device() const { return guard_.current_device(); }
  void reset() { guard_.reset(); }

 private:
  c10::impl::InlineOptionalDeviceGuard<MLUGuardImpl> guard_;
};

struct MLUStreamGuard {
  explicit MLUStreamGuard(c10::Stream stream) : guard_(stream) {}
  MLUStreamGuard(const MLUStreamGuard&) = delete;
  MLUStreamGuard& operator=(const MLUStreamGuard&) = delete;

  void reset_stream(c10::Stream stream) { guard_.reset_stream(stream); }
  MLUStream original_stream() const { return MLUStream(guard_.original_stream()); }
  MLUStream current_stream() const { return MLUStream(guard_.current_stream()); }
  c10::Device original_device() const { return guard_.original_device(); }
  c10::Device current_device() const { return guard_.current_device(); }

 private:
  c10::impl::InlineStreamGuard<MLUGuardImpl> guard_;
};

struct OptionalMLUStreamGuard {
  OptionalMLUStreamGuard() = default;
  explicit OptionalMLUStreamGuard(std::optional<c10::Stream> stream) : guard_(stream) {}
  OptionalMLUStreamGuard(const OptionalMLUStreamGuard&) = delete;
  OptionalMLUStreamGuard& operator=(const OptionalMLUStreamGuard&) = delete;

  void reset_stream(c10::Stream stream) { guard_.reset_stream(stream); }
  void reset() { guard_.reset(); }

 private:
  c10::impl::InlineOptionalStreamGuard<MLUGuardImpl> guard_;
};

}  // namespace torch_mlu
