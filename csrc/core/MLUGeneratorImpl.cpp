#include "csrc/core/MLUGeneratorImpl.h"

#include <cstring>
#include <deque>
#include <mutex>

#include <ATen/core/DistributionsHelper.h>
#include <ATen/EmptyTensor.h>

#include "csrc/core/MLUFunctions.h"
#include "csrc/core/MLUStream.h"

namespace torch_mlu {
namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

c10::DeviceIndex resolve(c10::DeviceIndex device) {
  if (device < 0) return current_device();
  check_device_index(device);
  return device;
}

}  // namespace

MLUGeneratorImpl::MLUGeneratorImpl(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(c10::default_rng_seed_val) {}

void MLUGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void MLUGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t MLUGeneratorImpl::get_offset() const { return offset_; }
uint64_t MLUGeneratorImpl::current_seed() const { return seed_; }

uint64_t MLUGeneratorImpl::seed() {
  uint64_t random = c10::detail::getNonDeterministicRandom(/*is_cuda=*/true);
  set_current_seed(random);
  return random;
}

c10::intrusive_ptr<c10::TensorImpl> MLUGeneratorImpl::get_state() const {
  // Allocated beneath the dispatcher, as CUDA's generator does: under a fake-tensor mode (compiled code saving
  // the state for a recomputed random op, Note [Compiled RNG state on mlu]) the state is still real bytes.
  at::Tensor state = at::detail::empty_cpu({static_cast<int64_t>(kStateBytes)}, at::kByte, std::nullopt, std::nullopt,
                                           std::nullopt, std::nullopt);
  uint64_t words[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), words, kStateBytes);
  return state.getIntrusivePtr();
}

void MLUGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.device().is_cpu(),
              "RNG state must be a torch.ByteTensor on the CPU");
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(kStateBytes), "Expected an mlu RNG state of ", kStateBytes,
              " bytes (seed and offset), got ", new_state.numel(), " bytes");
  uint64_t words[2];
  std::memcpy(words, new_state.data(), kStateBytes);
  seed_ = words[0];
  offset_ = words[1];
}

std::pair<uint64_t, uint64_t> MLUGeneratorImpl::philox_engine_inputs() { return {seed_, offset_++}; }

PhiloxDraw MLUGeneratorImpl::draw(uint64_t stream_capture) {
  if (stream_capture == 0) {
    auto [seed, offset] = philox_engine_inputs();
    return {seed, offset, nullptr};
  }
  auto it = captures_.find(stream_capture);
  TORCH_CHECK(it != captures_.end(),
              "a random op in a graph capture drew from a generator the graph does not own, so its numbers would "
              "repeat on every replay: inside captured code, draw from the default mlu generator (no generator= "
              "argument)");
  return {0, it->second.draws++, it->second.arguments};
}

void MLUGeneratorImpl::capture_prologue(uint64_t id, const uint64_t* graph_arguments) {
  TORCH_INTERNAL_ASSERT(id != 0 && graph_arguments != nullptr);
  const bool inserted = captures_.emplace(id, CaptureState{graph_arguments, 0}).second;
  TORCH_INTERNAL_ASSERT(inserted, "the mlu generator of device ", static_cast<int>(device().index()),
                        " already serves capture ", id);
}

uint64_t MLUGeneratorImpl::capture_epilogue(uint64_t id) {
  auto it = captures_.find(id);
  if (it == captures_.end()) return 0;
  const uint64_t draws = it->second.draws;
  captures_.erase(it);
  return draws;
}

std::pair<uint64_t, uint64_t> MLUGeneratorImpl::replay_prologue(uint64_t draws) {
  const std::pair<uint64_t, uint64_t> start{seed_, offset_};
  offset_ += draws;
  return start;
}

MLUGeneratorImpl* MLUGeneratorImpl::clone_impl() const {
  auto* copy = new MLUGeneratorImpl(device().index());
  copy->seed_ = seed_;
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& getDefaultMLUGenerator(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::deque<at::Generator> generators;  // deque: references stay valid
  c10::DeviceIndex index = resolve(device);
  std::lock_guard<std::mutex> lock(mu);
  while (generators.size() <= static_cast<size_t>(index)) {
    generators.push_back(at::make_generator<MLUGeneratorImpl>(static_cast<c10::DeviceIndex>(generators.size())));
  }
  return generators[index];
}

at::Generator createMLUGenerator(c10::DeviceIndex device) {
  return at::make_generator<MLUGeneratorImpl>(resolve(device));
}

MLUGeneratorImpl* get_mlu_generator(const std::optional<at::Generator>& generator, c10::DeviceIndex device) {
  if (generator.has_value() && generator->defined()) {
    TORCH_CHECK(generator->device().type() == c10::DeviceType::PrivateUse1, "Expected an mlu generator, got a ",
                generator->device().type(), " generator. Create it with torch.Generator(device=\"mlu\").");
    return at::check_generator<MLUGeneratorImpl>(generator);
  }
  return at::check_generator<MLUGeneratorImpl>(getDefaultMLUGenerator(device));
}

PhiloxDraw next_philox_draw(const std::optional<at::Generator>& generator, c10::DeviceIndex device) {
  MLUGeneratorImpl* gen = get_mlu_generator(generator, device);
  const uint64_t capture = getCurrentMLUStream(device).capture_id();
  std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->draw(capture);
}

}  // namespace torch_mlu
