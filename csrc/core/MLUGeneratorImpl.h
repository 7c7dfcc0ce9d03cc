// MLUGeneratorImpl: the random-number generator of an mlu device, a
// counter-based Philox4x32-10 stream (cf. at::CUDAGeneratorImpl).
//
// State = (seed, offset). Every random op takes the current pair and advances
// the offset by one (philox_engine_inputs); its element with logical index i
// draws philox(seed, subsequence = i, offset) (see kernels/random.h). So
// results depend only on the seed and on how many random ops ran before —
// not on device threads, streams or memory layout — and saving (seed,
// offset) with get_state() reproduces the sequence. get_state()/set_state()
// use CUDA's layout: 16 bytes, the seed then the offset, as uint64.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_mlu {

struct MLUGeneratorImpl final : public c10::GeneratorImpl {
  explicit MLUGeneratorImpl(c10::DeviceIndex device = -1);

  void set_current_seed(uint64_t seed) override;  // also resets the offset to 0
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;  // reseeds from a nondeterministic source
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // The (seed, offset) for the next random op; advances the offset by one.
  // Callers hold mutex_ (see PyTorch's Note [Acquire lock when using random
  // generators] in c10/core/GeneratorImpl.h).
  std::pair<uint64_t, uint64_t> philox_engine_inputs();

  // Required by at::check_generator.
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  MLUGeneratorImpl* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The default generator of `device` (-1: the current device).
const at::Generator& getDefaultMLUGenerator(c10::DeviceIndex device = -1);
at::Generator createMLUGenerator(c10::DeviceIndex device = -1);
// `generator` if given (checked to be an mlu generator), else the default one.
MLUGeneratorImpl* get_mlu_generator(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

// The (seed, offset) of one random op on `device`, taken from `generator` (or
// the default one) under its lock.
struct PhiloxDraw {
  uint64_t seed;
  uint64_t offset;
};
PhiloxDraw next_philox_draw(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

}  // namespace torch_mlu
