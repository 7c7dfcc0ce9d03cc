// MLUGeneratorImpl: the random-number generator of an mlu device, a
// counter-based Philox4x32-10 stream (cf. at::CUDAGeneratorImpl).
//
// State = (seed, offset). Every random op takes the current pair and advances
// the offset by one (philox_engine_inputs); its element with logical index i
// draws philox(seed, subsequence = i, offset) (see mlu_kernels/random.h). So
// results depend only on the seed and on how many random ops ran before —
// not on device threads, streams or memory layout — and saving (seed,
// offset) with get_state() reproduces the sequence. get_state()/set_state()
// use CUDA's layout: 16 bytes, the seed then the offset, as uint64.
//
// Note [Graph-safe random numbers]
// A random op captured into a graph must draw fresh numbers at every replay,
// as the same ops run eagerly would. While a graph captures on a stream, its
// device's default generator answers that stream's draws with a position in
// the graph (0, 1, ...) and the address of the graph's argument block instead
// of values; the kernel resolves the draw when it runs (PhiloxDraw::resolved):
// seed = arguments[0], offset = arguments[1] + position. Each replay takes
// (seed, offset) from the generator and advances its offset by the graph's
// number of draws (replay_prologue); the launch copies the pair into the
// argument block in stream order (mluGraphLaunchWithArguments). Any other
// generator drawing for a capturing stream is refused: its numbers would
// repeat on every replay.
//
// Several graphs may capture on one device at once (threads capturing on
// their own streams, in any capture_error_mode): the generator keeps the
// state of each capture apart (its argument block and its count of draws,
// keyed by the capture id the stream reports), so each graph numbers its own
// draws 0, 1, ... whatever the interleaving, and each replay of any of them
// takes its own range of offsets from the generator under its lock.
#pragma once

#include <unordered_map>

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_mlu {

// The (seed, offset) of one random op. Inside a graph capture (Note
// [Graph-safe random numbers]) `graph_arguments` is set and `offset` is the
// draw's position in the graph: the values exist only when the kernel runs.
struct PhiloxDraw {
  uint64_t seed = 0;
  uint64_t offset = 0;
  const uint64_t* graph_arguments = nullptr;

  // The values to use; call it inside the kernel's task, not at launch.
  PhiloxDraw resolved() const {
    if (graph_arguments == nullptr) return *this;
    return {graph_arguments[0], graph_arguments[1] + offset, nullptr};
  }
};

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
  // generators] in c10/core/GeneratorImpl.h), as for the calls below.
  std::pair<uint64_t, uint64_t> philox_engine_inputs();
  // The draw of one random op on a stream that records into capture
  // `stream_capture` (0: none); see Note [Graph-safe random numbers].
  PhiloxDraw draw(uint64_t stream_capture);

  // Graph capture (Note [Graph-safe random numbers]): draws for capture `id`
  // name positions in the graph whose argument block is `graph_arguments`
  // until capture_epilogue, which returns how many the graph takes (0 for a
  // capture this generator does not serve). Other captures may be underway
  // meanwhile; each has its own positions.
  void capture_prologue(uint64_t id, const uint64_t* graph_arguments);
  uint64_t capture_epilogue(uint64_t id);
  // The (seed, offset) one replay of a graph taking `draws` draws starts from;
  // advances the offset past them.
  std::pair<uint64_t, uint64_t> replay_prologue(uint64_t draws);

  // Required by at::check_generator.
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  MLUGeneratorImpl* clone_impl() const override;

  // One capture this generator draws for (Note [Graph-safe random numbers]).
  struct CaptureState {
    const uint64_t* arguments = nullptr;  // the graph's argument block
    uint64_t draws = 0;                   // draws so far: the next one's position
  };

  uint64_t seed_;
  uint64_t offset_ = 0;
  std::unordered_map<uint64_t, CaptureState> captures_;  // by capture id; not copied by clone
};

// The default generator of `device` (-1: the current device).
const at::Generator& getDefaultMLUGenerator(c10::DeviceIndex device = -1);
at::Generator createMLUGenerator(c10::DeviceIndex device = -1);
// `generator` if given (checked to be an mlu generator), else the default one.
MLUGeneratorImpl* get_mlu_generator(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

// The draw of one random op on `device` (-1: the current one), taken from
// `generator` (or the default one) under its lock, for the device's current
// stream.
PhiloxDraw next_philox_draw(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

}  // namespace torch_mlu
