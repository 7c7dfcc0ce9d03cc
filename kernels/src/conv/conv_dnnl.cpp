#include "conv_dnnl.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "mlu_kernels/parallel.h"

#if MLU_KERNELS_WITH_DNNL
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "../common/vendor/dnnl_support.h"
#include "../common/scratch.h"
#include "mlu_kernels/half.h"
#endif

namespace mlu::kernels {
namespace {

ConvLibrary from_env() {
  if (!detail::dnnl_conv_linked()) return ConvLibrary::Own;
  const char* env = std::getenv("MLU_KERNELS_CONV");
  return env != nullptr && std::strcmp(env, "own") == 0 ? ConvLibrary::Own : ConvLibrary::Dnnl;
}

std::atomic<int>& preference() {
  static std::atomic<int> library{static_cast<int>(from_env())};
  return library;
}

}  // namespace

bool conv_library_available(ConvLibrary library) {
  return library == ConvLibrary::Own || detail::dnnl_conv_linked();
}

ConvLibrary conv_library() { return static_cast<ConvLibrary>(preference().load(std::memory_order_relaxed)); }

void set_conv_library(ConvLibrary library) {
  if (!conv_library_available(library)) library = ConvLibrary::Own;
  preference().store(static_cast<int>(library), std::memory_order_relaxed);
}

const char* conv_library_name(ConvLibrary library) { return library == ConvLibrary::Dnnl ? "dnnl" : "own"; }

bool conv_library_takes(ScalarType type) {
  return conv_library() == ConvLibrary::Dnnl && (type == ScalarType::Float32 || type == ScalarType::BFloat16);
}

namespace detail {

#if MLU_KERNELS_WITH_DNNL

bool dnnl_conv_linked() { return dnnl_loaded(); }

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dims = memory::dims;

const dnnl::engine& engine() { return dnnl_engine(); }
void one_thread() { dnnl_one_thread(); }

// A 64-byte aligned, growable per-thread buffer (the reordered operands; kept
// between calls like scratch.h's buffers).
struct alignas(64) Line {
  unsigned char bytes[64];
};
using Buffer = std::vector<Line>;
void* room(Buffer& buffer, size_t bytes) { return grow(buffer, static_cast<int64_t>((bytes + 63) / 64)); }
thread_local Buffer t_src, t_dst, t_weights, t_bias, t_scratchpad;

int64_t product_of(const int64_t* sizes, int count) {
  int64_t n = 1;
  for (int i = 0; i < count; ++i) n *= sizes[i];
  return n;
}

std::optional<memory::data_type> data_type(ScalarType type) {
  if (type == ScalarType::Float32) return memory::data_type::f32;
  if (type == ScalarType::BFloat16) return memory::data_type::bf16;
  return std::nullopt;
}

// Note [Slices of a convolution]
// One call is cut into parts, one per compute thread, along the samples or
// along the channels. Samples by default: each part is the convolution of a
// few samples, and weight gradients are summed over the parts. Channels where
// the outputs are small (late layers: under 256 positions) or the samples
// fewer than the threads: cut by samples, each thread would stream all the
// weights for little work. Then the forward pass and the weight gradient cut
// the output channels and the input gradient the input channels, in blocks of
// 16 (oneDNN's channel block); each part reads and writes a strided window of
// our tensors and no sum is needed.
struct Slice {
  int64_t n0 = 0, batch = 0;                 // samples [n0, n0 + batch)
  int64_t o0 = 0, out = 0, i0 = 0, in = 0;   // output and input channel windows
};

struct Cut {
  enum Along { Samples, OutChannels, InChannels } along = Samples;
  int64_t total = 1, step = 1, parts = 1;
  // Part i's window along the cut dimension: [begin(i), end(i)).
  int64_t begin(int64_t i) const { return along == Samples ? i * total / parts : std::min(total, i * step); }
  int64_t end(int64_t i) const { return along == Samples ? (i + 1) * total / parts : std::min(total, (i + 1) * step); }
  Slice slice(const ConvShape& s, int64_t i) const {
    Slice w{0, s.batch, 0, s.out_channels, 0, s.in_channels};
    const int64_t b = begin(i), n = end(i) - begin(i);
    if (along == Samples) w.n0 = b, w.batch = n;
    if (along == OutChannels) w.o0 = b, w.out = n;
    if (along == InChannels) w.i0 = b, w.in = n;
    return w;
  }
};

// `channels`: the channels the pass would cut (output channels, or input
// channels for the input gradient).
Cut cut_for(const ConvShape& s, Cut::Along channel_side) {
  const int threads = in_parallel_region() ? 1 : num_threads();
  const int64_t positions = product_of(s.out_size, s.dims);
  const int64_t channels = channel_side == Cut::OutChannels ? s.out_channels : s.in_channels;
  constexpr int64_t kBlock = 16;
  Cut cut;
  if (threads > 1 && s.groups == 1 && channels >= kBlock * threads && (positions < 256 || s.batch < threads)) {
    cut.along = channel_side;
    cut.total = channels;
    cut.step = (channels + threads * kBlock - 1) / (threads * kBlock) * kBlock;
    cut.parts = (channels + cut.step - 1) / cut.step;
  } else {
    cut.total = s.batch;
    cut.parts = std::max<int64_t>(1, std::min<int64_t>(threads, s.batch));
  }
  return cut;
}

// Our tensors' strides: activations [N, C, *size] in NCHW or channels-last
// order, weights [C_out, C_in / groups, *kernel] in OIHW or OHWI order
// ([groups, C_out / groups, C_in / groups, *kernel] with groups; those are
// never channels-last).
Dims activation_strides(const ConvShape& s, int64_t channels, const int64_t* size, bool channels_last) {
  Dims st(static_cast<size_t>(s.dims) + 2);
  int64_t inner = channels_last ? channels : 1;
  for (int d = s.dims - 1; d >= 0; --d) {
    st[static_cast<size_t>(d) + 2] = inner;
    inner *= size[d];
  }
  st[1] = channels_last ? 1 : inner;
  st[0] = channels_last ? inner : inner * channels;
  return st;
}

Dims weight_strides(const ConvShape& s, bool channels_last) {
  const int64_t per_group_in = s.in_channels / s.groups, per_group_out = s.out_channels / s.groups;
  Dims st(static_cast<size_t>(s.dims) + 2);
  int64_t inner = channels_last ? per_group_in : 1;
  for (int d = s.dims - 1; d >= 0; --d) {
    st[static_cast<size_t>(d) + 2] = inner;
    inner *= s.kernel[d];
  }
  st[1] = channels_last ? 1 : inner;
  st[0] = channels_last ? inner : inner * per_group_in;
  if (s.groups > 1) st.insert(st.begin(), st[0] * per_group_out);
  return st;
}

// One slice as oneDNN sees it: the shapes of its primitive and the windows
// of our tensors it reads and writes (plain descriptors with our strides,
// element offsets from the tensors' starts).
struct Window {
  Slice slice;
  Dims src, weights, dst, bias, strides, dilates, pad_l, pad_r;
  Dims weights_strides;
  memory::desc src_plain, weights_plain, dst_plain;
  int64_t src_at = 0, weights_at = 0, dst_at = 0, bias_at = 0;
  // Channels-last activations of a slice with all their channels: oneDNN
  // runs on them in place (Note [Channels-last convolutions in place]).
  bool in_place = false;
};

Window window(const ConvShape& s, const Slice& w, bool channels_last, memory::data_type type) {
  Window v;
  v.slice = w;
  v.src = {w.batch, w.in};
  v.dst = {w.batch, w.out};
  v.weights = s.groups > 1 ? Dims{s.groups, w.out / s.groups, w.in / s.groups} : Dims{w.out, w.in};
  v.bias = {w.out};
  for (int d = 0; d < s.dims; ++d) {
    v.src.push_back(s.in_size[d]);
    v.dst.push_back(s.out_size[d]);
    v.weights.push_back(s.kernel[d]);
    v.strides.push_back(s.stride[d]);
    v.dilates.push_back(s.dilation[d] - 1);
    v.pad_l.push_back(s.padding[d]);
    // The right padding that makes the output size come out (negative where
    // the last input elements are not read).
    v.pad_r.push_back((s.out_size[d] - 1) * s.stride[d] + (s.kernel[d] - 1) * s.dilation[d] + 1 - s.in_size[d] -
                      s.padding[d]);
  }
  const Dims src_st = activation_strides(s, s.in_channels, s.in_size, channels_last);
  const Dims dst_st = activation_strides(s, s.out_channels, s.out_size, channels_last);
  const Dims wei_st = weight_strides(s, channels_last);
  v.weights_strides = wei_st;
  v.src_plain = memory::desc(v.src, type, src_st);
  v.dst_plain = memory::desc(v.dst, type, dst_st);
  v.weights_plain = memory::desc(v.weights, type, wei_st);
  v.src_at = w.n0 * src_st[0] + w.i0 * src_st[1];
  v.dst_at = w.n0 * dst_st[0] + w.o0 * dst_st[1];
  v.weights_at = s.groups > 1 ? 0 : w.o0 * wei_st[0] + w.i0 * wei_st[1];
  v.bias_at = w.o0;
  v.in_place = channels_last && w.in == s.in_channels && w.out == s.out_channels;
  return v;
}

memory::desc any(const Dims& dims, memory::data_type type) { return memory::desc(dims, type, Tag::any); }

// Note [Channels-last convolutions in place]
// oneDNN's direct kernels take channels-last (nspc) activations as they are,
// which is what PyTorch's CPU path (ideep) asks for: src and dst in nspc,
// only the weights in the layout oneDNN picks. Letting it pick the
// activations' layout too ("any") got blocked ones (nCdhw16c) and a reorder
// of every activation in and out of each call: the (2+1)-D video model's
// six channels-last layers, forward and both gradients, took 160 ms against
// the CPU's 88 (115 in place). A slice cut by channels is a strided window,
// not dense nspc; those keep "any" and the reorders.
memory::desc src_desc(const Window& v, memory::data_type type) { return v.in_place ? v.src_plain : any(v.src, type); }
memory::desc dst_desc(const Window& v, memory::data_type type) { return v.in_place ? v.dst_plain : any(v.dst, type); }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Window& v, memory::data_type type, bool with_bias) {
  const auto prop = dnnl::prop_kind::forward_training;
  const auto alg = dnnl::algorithm::convolution_direct;
  const auto desc =
      with_bias ? dnnl::convolution_forward::desc(prop, alg, src_desc(v, type), any(v.weights, type), any(v.bias, type),
                                                  dst_desc(v, type), v.strides, v.dilates, v.pad_l, v.pad_r)
                : dnnl::convolution_forward::desc(prop, alg, src_desc(v, type), any(v.weights, type), dst_desc(v, type),
                                                  v.strides, v.dilates, v.pad_l, v.pad_r);
  return {desc, user_scratchpad(), engine()};
}

// `plain` as the layout `want`: the same memory when it already is, else
// reordered into `buffer`.
memory as_layout(const memory& plain, const memory::desc& want, Buffer& buffer, dnnl::stream& stream) {
  if (plain.get_desc() == want) return plain;
  memory converted(want, engine(), room(buffer, want.get_size()));
  dnnl::reorder(plain, converted).execute(stream, const_cast<memory&>(plain), converted);
  return converted;
}

// Memory in layout `want` to be written, then copied to `plain` by finish().
struct Output {
  memory plain, written;
  Output(const memory& plain_, const memory::desc& want, Buffer& buffer)
      : plain(plain_),
        written(plain_.get_desc() == want ? plain_ : memory(want, engine(), room(buffer, want.get_size()))) {}
  void finish(dnnl::stream& stream) {
    if (written.get_data_handle() != plain.get_data_handle()) {
      dnnl::reorder(written, plain).execute(stream, written, plain);
    }
  }
};

memory scratchpad(const memory::desc& desc) {
  return memory(desc, engine(), room(t_scratchpad, std::max<size_t>(desc.get_size(), 1)));
}

memory view(const memory::desc& desc, const void* base, int64_t at, ScalarType type) {
  auto* p = static_cast<unsigned char*>(const_cast<void*>(base)) + static_cast<size_t>(at) * element_size(type);
  return memory(desc, engine(), p);
}

// The primitives of each distinct slice shape of a cut (at most two), made
// on the calling thread before the parts run.
template <class Pd>
struct Plans {
  std::vector<Window> windows;  // per part
  std::vector<Pd> pds;          // per distinct shape
  std::vector<size_t> pd_of;    // per part
};

template <class Pd, class Make>
Plans<Pd> make_plans(const ConvShape& s, const Cut& cut, bool channels_last, memory::data_type type, Make make) {
  Plans<Pd> plans;
  std::vector<Dims> shapes;
  for (int64_t i = 0; i < cut.parts; ++i) {
    Window v = window(s, cut.slice(s, i), channels_last, type);
    const Dims key{v.src[0], v.src[1], v.dst[1]};
    auto at = std::find(shapes.begin(), shapes.end(), key);
    if (at == shapes.end()) {
      shapes.push_back(key);
      plans.pds.push_back(make(v));
      at = shapes.end() - 1;
    }
    plans.pd_of.push_back(static_cast<size_t>(at - shapes.begin()));
    plans.windows.push_back(std::move(v));
  }
  return plans;
}

// Runs part(i, window, primitive descriptor, stream) for each part of
// `plans` on the pool, oneDNN one thread per part, and waits for its
// stream; false if any part threw (the caller then runs its own kernel,
// which overwrites every output).
template <class Pd, class Part>
bool run_parts(const Plans<Pd>& plans, Part part) {
  std::atomic<bool> ok{true};
  parallel_for(0, static_cast<int64_t>(plans.windows.size()), 1, [&](int64_t lo, int64_t hi) {
    one_thread();
    for (int64_t i = lo; i < hi; ++i) {
      try {
        dnnl::stream stream(engine());
        part(i, plans.windows[static_cast<size_t>(i)], plans.pds[plans.pd_of[static_cast<size_t>(i)]], stream);
        stream.wait();
      } catch (const dnnl::error&) {
        ok.store(false, std::memory_order_relaxed);
      }
    }
  });
  return ok.load(std::memory_order_relaxed);
}

}  // namespace

bool dnnl_conv_forward(const ConvShape& s, ScalarType type, bool channels_last, const void* input,
                       const void* weight, const void* bias, void* output) {
  const auto dt = data_type(type);
  if (conv_library() != ConvLibrary::Dnnl || !dt) return false;
  try {
    one_thread();
    const Cut cut = cut_for(s, Cut::OutChannels);
    const auto plans = make_plans<dnnl::convolution_forward::primitive_desc>(
        s, cut, channels_last, *dt, [&](const Window& v) { return forward_pd(v, *dt, bias != nullptr); });
    return run_parts(plans, [&](int64_t, const Window& v, const auto& pd, dnnl::stream& stream) {
      const memory src = as_layout(view(v.src_plain, input, v.src_at, type), pd.src_desc(), t_src, stream);
      const memory weights =
          as_layout(view(v.weights_plain, weight, v.weights_at, type), pd.weights_desc(), t_weights, stream);
      Output dst(view(v.dst_plain, output, v.dst_at, type), pd.dst_desc(), t_dst);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                           {DNNL_ARG_WEIGHTS, weights},
                                           {DNNL_ARG_DST, dst.written},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
      if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, view(pd.bias_desc(), bias, v.bias_at, type));
      dnnl::convolution_forward(pd).execute(stream, args);
      dst.finish(stream);
    });
  } catch (const dnnl::error&) {
    return false;
  }
}

bool dnnl_conv_backward_input(const ConvShape& s, ScalarType type, bool channels_last, const void* grad_output,
                              const void* weight, const void* bias, void* grad_input) {
  const auto dt = data_type(type);
  // A transposed convolution's bias is added in float here; in 16 bits that
  // would round twice, so those run our kernel.
  if (conv_library() != ConvLibrary::Dnnl || !dt || (bias != nullptr && type != ScalarType::Float32)) return false;
  try {
    one_thread();
    const Cut cut = cut_for(s, Cut::InChannels);
    const auto plans =
        make_plans<dnnl::convolution_backward_data::primitive_desc>(s, cut, channels_last, *dt, [&](const Window& v) {
          const auto desc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_desc(v, *dt),
                                                                  any(v.weights, *dt), dst_desc(v, *dt), v.strides,
                                                                  v.dilates, v.pad_l, v.pad_r);
          return dnnl::convolution_backward_data::primitive_desc(desc, user_scratchpad(), engine(),
                                                                 forward_pd(v, *dt, false));
        });
    return run_parts(plans, [&](int64_t, const Window& v, const auto& pd, dnnl::stream& stream) {
      const memory diff_dst =
          as_layout(view(v.dst_plain, grad_output, v.dst_at, type), pd.diff_dst_desc(), t_dst, stream);
      const memory weights =
          as_layout(view(v.weights_plain, weight, v.weights_at, type), pd.weights_desc(), t_weights, stream);
      Output diff_src(view(v.src_plain, grad_input, v.src_at, type), pd.diff_src_desc(), t_src);
      dnnl::convolution_backward_data(pd).execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst},
                                                           {DNNL_ARG_WEIGHTS, weights},
                                                           {DNNL_ARG_DIFF_SRC, diff_src.written},
                                                           {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
      diff_src.finish(stream);
      stream.wait();  // the bias is added to the finished gradient
      if (bias != nullptr) {  // float32, NCHW (channels-last calls pass none)
        const float* b = static_cast<const float*>(bias);
        const int64_t plane = product_of(s.in_size, s.dims);
        const Slice& w = v.slice;
        for (int64_t n = w.n0; n < w.n0 + w.batch; ++n) {
          for (int64_t c = w.i0; c < w.i0 + w.in; ++c) {
            float* row = static_cast<float*>(grad_input) + (n * s.in_channels + c) * plane;
            for (int64_t x = 0; x < plane; ++x) row[x] += b[c];
          }
        }
      }
    });
  } catch (const dnnl::error&) {
    return false;
  }
}

bool dnnl_conv_backward_weight(const ConvShape& s, ScalarType type, bool channels_last, const void* grad_output,
                               const void* input, void* grad_weight, void* grad_bias) {
  const auto dt = data_type(type);
  if (conv_library() != ConvLibrary::Dnnl || !dt) return false;
  constexpr auto f32 = memory::data_type::f32;
  try {
    one_thread();
    const Cut cut = cut_for(s, Cut::OutChannels);
    const bool with_bias = grad_bias != nullptr;
    const auto plans = make_plans<dnnl::convolution_backward_weights::primitive_desc>(
        s, cut, channels_last, *dt, [&](const Window& v) {
          const auto alg = dnnl::algorithm::convolution_direct;
          const auto desc =
              with_bias
                  ? dnnl::convolution_backward_weights::desc(alg, src_desc(v, *dt), any(v.weights, f32),
                                                             any(v.bias, f32), dst_desc(v, *dt), v.strides, v.dilates,
                                                             v.pad_l, v.pad_r)
                  : dnnl::convolution_backward_weights::desc(alg, src_desc(v, *dt), any(v.weights, f32),
                                                             dst_desc(v, *dt), v.strides, v.dilates, v.pad_l, v.pad_r);
          return dnnl::convolution_backward_weights::primitive_desc(desc, user_scratchpad(), engine(),
                                                                    forward_pd(v, *dt, with_bias));
        });
    // Cut by channels, each part writes its window of the gradients (rounded
    // once by the reorder). Cut by samples, each part writes float partial
    // sums [weights, bias] in our plain layout, summed below in part order.
    const bool partial_sums = cut.along == Cut::Samples && cut.parts > 1;
    const int64_t weight_count = (s.out_channels / s.groups) * s.in_channels * product_of(s.kernel, s.dims);
    const int64_t per_part = weight_count + s.out_channels;
    std::vector<float> partial(partial_sums ? static_cast<size_t>(cut.parts * per_part) : 0);
    const bool ok = run_parts(plans, [&](int64_t i, const Window& v, const auto& pd, dnnl::stream& stream) {
      const memory src = as_layout(view(v.src_plain, input, v.src_at, type), pd.src_desc(), t_src, stream);
      const memory diff_dst =
          as_layout(view(v.dst_plain, grad_output, v.dst_at, type), pd.diff_dst_desc(), t_dst, stream);
      memory weights_out, bias_out;
      if (partial_sums) {
        float* mine = partial.data() + i * per_part;
        weights_out = memory(memory::desc(v.weights, f32, v.weights_strides), engine(), mine);
        bias_out = memory(memory::desc(v.bias, f32, Tag::x), engine(), mine + weight_count);
      } else {
        weights_out = view(v.weights_plain, grad_weight, v.weights_at, type);
        if (with_bias) bias_out = view(memory::desc(v.bias, *dt, Tag::x), grad_bias, v.bias_at, type);
      }
      Output diff_weights(weights_out, pd.diff_weights_desc(), t_weights);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                           {DNNL_ARG_DIFF_DST, diff_dst},
                                           {DNNL_ARG_DIFF_WEIGHTS, diff_weights.written},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
      // The bias gradient in float; a 16-bit one reordered (rounded) after.
      std::optional<Output> diff_bias;
      if (with_bias) {
        diff_bias.emplace(bias_out, pd.diff_bias_desc(), t_bias);
        args.emplace(DNNL_ARG_DIFF_BIAS, diff_bias->written);
      }
      dnnl::convolution_backward_weights(pd).execute(stream, args);
      diff_weights.finish(stream);
      if (diff_bias) diff_bias->finish(stream);
    });
    if (!ok || !partial_sums) return ok;
    const auto store = [&](void* to, int64_t offset, int64_t count) {
      parallel_for(0, count, 4096, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j) {
          float sum = partial[static_cast<size_t>(offset + j)];
          for (int64_t part = 1; part < cut.parts; ++part) sum += partial[static_cast<size_t>(part * per_part + offset + j)];
          if (type == ScalarType::Float32) {
            static_cast<float*>(to)[j] = sum;
          } else {
            static_cast<BFloat16*>(to)[j] = bfloat16_from_float(sum);
          }
        }
      });
    };
    store(grad_weight, 0, weight_count);
    if (with_bias) store(grad_bias, weight_count, s.out_channels);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

#else  // !MLU_KERNELS_WITH_DNNL

bool dnnl_conv_linked() { return false; }

bool dnnl_conv_forward(const ConvShape&, ScalarType, bool, const void*, const void*, const void*, void*) {
  return false;
}
bool dnnl_conv_backward_input(const ConvShape&, ScalarType, bool, const void*, const void*, const void*, void*) {
  return false;
}
bool dnnl_conv_backward_weight(const ConvShape&, ScalarType, bool, const void*, const void*, void*, void*) {
  return false;
}

#endif

}  // namespace detail
}  // namespace mlu::kernels
