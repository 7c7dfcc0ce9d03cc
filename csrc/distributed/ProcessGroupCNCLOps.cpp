// The ops of the cncl backend: for each, which Gloo call runs on the host
// aliases of the mlu tensors, what the ranks must agree on, and how the reduce
// ops Gloo lacks are made (Note [cncl over Gloo] in ProcessGroupCNCL.h).
#include <ATen/ops/from_blob.h>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "csrc/core/MLULaunch.h"
#include "csrc/distributed/CNCLConfig.h"
#include "csrc/distributed/ProcessGroupCNCL.h"

namespace torch_mlu::distributed {
namespace {

using c10d::ReduceOp;
using Fingerprint = std::array<int64_t, 4>;

// A CPU tensor over the same memory: the software MLU's memory is
// host-addressable, so Gloo reads and writes it in place, at the address
// device code uses (Note [Device pointers] in csrc/core/MLULaunch.h).
at::Tensor host_alias(const at::Tensor& t) {
  return at::from_blob(device_ptr(t), t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
}

std::vector<at::Tensor> host_aliases(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(host_alias(t));
  return out;
}

std::vector<std::vector<at::Tensor>> host_aliases(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(lists.size());
  for (const auto& list : lists) out.push_back(host_aliases(list));
  return out;
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> out;
  for (const auto& list : lists) out.insert(out.end(), list.begin(), list.end());
  return out;
}

int64_t total_numel(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

const at::Tensor& first(const char* op, const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK_VALUE(!tensors.empty(), "cncl ", op, ": expected at least one tensor");
  return tensors.front();
}

// Note [Rooted collectives check their root at the call]
// broadcast, reduce, gather and scatter name a root rank. A root outside the
// group, or a root's tensor lists that do not fit the group, would fail only
// inside the collective, on the communication stream, as a device error that
// leaves the ranks out of step and the group unusable. So they are checked
// here, on the calling thread before anything is enqueued, as Gloo checks
// them: a ValueError on the rank that made the mistake, and the group goes on.
void check_root(const char* op, int64_t root, int world_size) {
  TORCH_CHECK_VALUE(root >= 0 && root < world_size, "cncl ", op, ": invalid root rank ", root, " (world size ",
                    world_size, ")");
}

// The root's list of per-rank tensors (gather's outputs, scatter's inputs); other ranks pass none.
void check_root_list(const char* op, const char* what, const std::vector<std::vector<at::Tensor>>& lists,
                     const at::Tensor& like, bool is_root, int world_size) {
  if (!is_root) {
    TORCH_CHECK_VALUE(lists.empty() || (lists.size() == 1 && lists[0].empty()), "cncl ", op, ": only the root rank ",
                      "passes a list of ", what, "; this rank is not the root");
    return;
  }
  TORCH_CHECK_VALUE(lists.size() == 1 && lists[0].size() == static_cast<size_t>(world_size), "cncl ", op,
                    ": the root needs one list of world_size (", world_size, ") ", what, ", got ",
                    lists.empty() ? 0 : lists[0].size());
  for (const auto& t : lists[0]) {
    TORCH_CHECK_VALUE(t.scalar_type() == like.scalar_type() && t.numel() == like.numel(), "cncl ", op, ": ", what,
                      " must match the tensor's dtype and size (", like.scalar_type(), ", ", like.numel(),
                      " elements), got ", t.scalar_type(), ", ", t.numel(), " elements");
  }
}

// How a c10d reduce op runs on Gloo: SUM for AVG (then a division) and for
// PREMUL_SUM (after a scaling); the others as they are.
struct Reduction {
  ReduceOp gloo_op{ReduceOp::SUM};
  bool average = false;
  bool premul = false;
  double factor = 1.0;
  at::Tensor factor_tensor;  // an alias of PREMUL_SUM's tensor factor (read in the task)
  at::Tensor factor_owner;   // the factor itself, kept alive as an input

  // Scales `t` in place (PREMUL_SUM); returns it.
  const at::Tensor& scale(const at::Tensor& t) const {
    if (premul) factor_tensor.defined() ? t.mul_(factor_tensor.to(t.scalar_type())) : t.mul_(factor);
    return t;
  }
  void finish(const at::Tensor& t, int size) const {
    if (!average) return;
    if (c10::isFloatingType(t.scalar_type())) {
      t.div_(size);
    } else {
      t.div_(size, "trunc");
    }
  }
};

Reduction plan_reduction(const char* op, const ReduceOp& reduce_op, c10::ScalarType dtype) {
  Reduction r;
  const bool floating = c10::isFloatingType(dtype);
  switch (reduce_op.op_) {
    case ReduceOp::AVG:
      TORCH_CHECK_VALUE(dtype != at::kBool, "cncl ", op, ": ReduceOp.AVG does not apply to bool tensors");
      r.average = true;
      break;
    case ReduceOp::PREMUL_SUM: {
      TORCH_CHECK_VALUE(floating, "cncl ", op, ": ReduceOp.PREMUL_SUM needs a floating-point tensor, got ", dtype);
      r.premul = true;
      const auto* supplement = dynamic_cast<const c10d::PreMulSumSupplement*>(reduce_op.supplement_.get());
      TORCH_CHECK_VALUE(supplement != nullptr, "cncl ", op, ": PREMUL_SUM without a factor");
      if (supplement->tensor_factor.defined()) {
        r.factor_owner = supplement->tensor_factor;
        r.factor_tensor = r.factor_owner.is_cpu() ? r.factor_owner : host_alias(r.factor_owner);
      } else {
        r.factor = supplement->double_factor;
      }
      break;
    }
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      TORCH_CHECK_VALUE(!floating, "cncl ", op, ": bitwise reduce ops need integer or bool tensors, got ", dtype);
      r.gloo_op = reduce_op;
      break;
    case ReduceOp::SUM:
    case ReduceOp::PRODUCT:
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      r.gloo_op = ReduceOp(reduce_op.op_);
      break;
    default:
      TORCH_CHECK_VALUE(false, "cncl ", op, ": unsupported reduce op ", static_cast<int>(reduce_op.op_));
  }
  return r;
}

std::vector<at::Tensor> with_factor(std::vector<at::Tensor> inputs, const Reduction& r) {
  if (r.factor_owner.defined() && !r.factor_owner.is_cpu()) inputs.push_back(r.factor_owner);
  return inputs;
}

// Copies scaled by PREMUL_SUM's factor, so the caller's input is left alone.
std::vector<at::Tensor> scaled_copies(const std::vector<at::Tensor>& hosts, const Reduction& r) {
  std::vector<at::Tensor> out;
  for (const auto& h : hosts) out.push_back(r.scale(h.clone()));
  return out;
}

Fingerprint reduce_fingerprint(const at::Tensor& t, int64_t numel, int64_t root, const ReduceOp& op) {
  return Fingerprint{static_cast<int64_t>(t.scalar_type()), numel, root, static_cast<int64_t>(op.op_)};
}

c10d::ReduceScatterOptions gloo_options(const Reduction& r) {
  c10d::ReduceScatterOptions opts;
  opts.reduceOp = r.gloo_op;
  return opts;
}

// A reduction into its inputs (all_reduce, reduce): PREMUL_SUM scales them
// first, AVG divides the result after (where `average_here`: the root of a
// reduce). `start(gloo, hosts, gloo_op)` issues the Gloo op.
template <class Start>
ProcessGroupCNCL::Call in_place_reduction(const char* name, Fingerprint fingerprint, std::vector<at::Tensor> hosts,
                                          Reduction r, int size, bool average_here, Start start) {
  return ProcessGroupCNCL::Call{name, fingerprint,
                                [hosts, r, start](c10d::Backend& gloo) mutable {
                                  for (const auto& h : hosts) r.scale(h);
                                  return start(gloo, hosts, r.gloo_op);
                                },
                                [hosts, r, size, average_here] {
                                  if (!average_here) return;
                                  for (const auto& h : hosts) r.finish(h, size);
                                }};
}

// A reduction from inputs into separate outputs (the reduce_scatter family):
// `start(gloo, outs, ins, r)` issues the Gloo op (scaling copies of the inputs
// for PREMUL_SUM, so the caller's inputs are left alone); AVG divides the outputs.
template <class Outs, class Ins, class Start>
ProcessGroupCNCL::Call scatter_reduction(const char* name, Fingerprint fingerprint, Outs outs, Ins ins, Reduction r,
                                         int size, Start start) {
  return ProcessGroupCNCL::Call{
      name, fingerprint, [outs, ins, r, start](c10d::Backend& gloo) mutable { return start(gloo, outs, ins, r); },
      [outs, r, size] {
        for (const auto& o : outs) r.finish(o, size);
      }};
}

// An all-reduce's transfer: through the group's shared memory where it has
// one and takes the dtype and op (Note [cncl shared-memory all-reduce]; the
// choice depends only on what the ranks agree on, so every rank makes the
// same), else `gloo_start`. The tensors go as flat views of their dense
// memory, one after another; null Work: done.
template <class GlooStart>
auto through_shared_memory(const std::shared_ptr<SharedMemoryAllreduce>& transport, const Reduction& r,
                           c10::ScalarType dtype, std::chrono::milliseconds timeout, GlooStart gloo_start) {
  std::shared_ptr<SharedMemoryAllreduce> used =
      transport && SharedMemoryAllreduce::supports(dtype, r.gloo_op.op_) ? transport : nullptr;
  const auto wait_limit = timeout + kTransferTimeoutMargin;
  return [used, wait_limit, gloo_start](c10d::Backend& gloo, std::vector<at::Tensor>& hosts,
                                        const ReduceOp& op) -> c10::intrusive_ptr<c10d::Work> {
    if (!used) return gloo_start(gloo, hosts, op);
    for (const auto& h : hosts) {
      used->allreduce(at::from_blob(h.data_ptr(), {h.numel()}, h.options()), op.op_, wait_limit);
    }
    return {};
  };
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const auto& t = first("broadcast", tensors);
  check_root("broadcast", opts.rootRank, getSize());
  TORCH_CHECK_VALUE(opts.rootTensor >= 0 && opts.rootTensor < static_cast<int64_t>(tensors.size()),
                    "cncl broadcast: invalid root tensor ", opts.rootTensor, " (", tensors.size(), " tensors)");
  Call call{"broadcast", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(tensors), opts.rootRank, -1},
            [hosts = host_aliases(tensors), opts](c10d::Backend& gloo) mutable { return gloo.broadcast(hosts, opts); },
            nullptr};
  return run(std::move(call), c10d::OpType::BROADCAST, tensors, tensors, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const auto& t = first("all_reduce", tensors);
  Reduction r = plan_reduction("all_reduce", opts.reduceOp, t.scalar_type());
  Call call = in_place_reduction(
      "all_reduce", reduce_fingerprint(t, total_numel(tensors), -1, opts.reduceOp), host_aliases(tensors), r, getSize(),
      true,
      through_shared_memory(shared_memory_, r, t.scalar_type(), timeout_,
                            [](c10d::Backend& gloo, std::vector<at::Tensor>& hosts, const ReduceOp& op) {
                              c10d::AllreduceOptions gloo_opts;
                              gloo_opts.reduceOp = op;
                              return gloo.allreduce(hosts, gloo_opts);
                            }));
  return run(std::move(call), c10d::OpType::ALLREDUCE, with_factor(tensors, r), tensors, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  const auto& t = first("all_reduce_coalesced", tensors);
  for (const auto& other : tensors) {
    TORCH_CHECK_VALUE(other.scalar_type() == t.scalar_type(),
                      "cncl all_reduce_coalesced: all tensors must have one dtype, got ", t.scalar_type(), " and ",
                      other.scalar_type());
  }
  Reduction r = plan_reduction("all_reduce_coalesced", opts.reduceOp, t.scalar_type());
  Call call = in_place_reduction(
      "all_reduce", reduce_fingerprint(t, total_numel(tensors), -1, opts.reduceOp), host_aliases(tensors), r, getSize(),
      true,
      through_shared_memory(shared_memory_, r, t.scalar_type(), timeout_,
                            [](c10d::Backend& gloo, std::vector<at::Tensor>& hosts, const ReduceOp& op) {
                              c10d::AllreduceCoalescedOptions gloo_opts;
                              gloo_opts.reduceOp = op;
                              return gloo.allreduce_coalesced(hosts, gloo_opts);
                            }));
  return run(std::move(call), c10d::OpType::ALLREDUCE_COALESCED, with_factor(tensors, r), tensors, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const auto& t = first("reduce", tensors);
  check_root("reduce", opts.rootRank, getSize());
  Reduction r = plan_reduction("reduce", opts.reduceOp, t.scalar_type());
  Call call = in_place_reduction("reduce", reduce_fingerprint(t, total_numel(tensors), opts.rootRank, opts.reduceOp),
                                 host_aliases(tensors), r, getSize(), getRank() == opts.rootRank,
                                 [opts](c10d::Backend& gloo, std::vector<at::Tensor>& hosts, const ReduceOp& op) {
                                   c10d::ReduceOptions gloo_opts = opts;
                                   gloo_opts.reduceOp = op;
                                   return gloo.reduce(hosts, gloo_opts);
                                 });
  return run(std::move(call), c10d::OpType::REDUCE, with_factor(tensors, r), tensors, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  const auto& t = first("all_gather", inputs);
  Call call{"all_gather", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(inputs), -1, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.allgather(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::ALLGATHER, inputs, flatten(outputs), kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(), "cncl all_gather_into_tensor: the output has ",
                    output.numel(), " elements; it needs world_size (", getSize(), ") x the input's ", input.numel());
  TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(), "cncl all_gather_into_tensor: output dtype ",
                    output.scalar_type(), " differs from input dtype ", input.scalar_type());
  Call call{"all_gather_into_tensor", Fingerprint{static_cast<int64_t>(input.scalar_type()), input.numel(), -1, -1},
            [out = host_alias(output), in = host_alias(input), opts](c10d::Backend& gloo) mutable {
              return gloo._allgather_base(out, in, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::_ALLGATHER_BASE, {input}, {output}, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions& opts) {
  const auto& t = first("all_gather_coalesced", inputs);
  Call call{"all_gather", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(inputs), -1, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.allgather_coalesced(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::ALLGATHER_COALESCED, inputs, flatten(outputs), kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  const auto& t = first("all_gather_into_tensor_coalesced", inputs);
  Call call{"all_gather_into_tensor", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(inputs), -1, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.allgather_into_tensor_coalesced(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::COALESCED, inputs, outputs, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  const auto& t = first("gather", inputs);
  check_root("gather", opts.rootRank, getSize());
  check_root_list("gather", "outputs", outputs, t, getRank() == opts.rootRank, getSize());
  Call call{"gather", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(inputs), opts.rootRank, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.gather(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::GATHER, inputs, flatten(outputs), kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  const auto& t = first("scatter", outputs);
  check_root("scatter", opts.rootRank, getSize());
  check_root_list("scatter", "inputs", inputs, t, getRank() == opts.rootRank, getSize());
  Call call{"scatter", Fingerprint{static_cast<int64_t>(t.scalar_type()), total_numel(outputs), opts.rootRank, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.scatter(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::SCATTER, flatten(inputs), outputs, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  const auto& t = first("reduce_scatter", outputs);
  Reduction r = plan_reduction("reduce_scatter", opts.reduceOp, t.scalar_type());
  Call call = scatter_reduction("reduce_scatter", reduce_fingerprint(t, total_numel(outputs), -1, opts.reduceOp),
                                host_aliases(outputs), host_aliases(inputs), r, getSize(),
                                [](c10d::Backend& gloo, std::vector<at::Tensor>& outs,
                                   std::vector<std::vector<at::Tensor>>& ins, const Reduction& r) {
                                  if (r.premul) {
                                    for (auto& list : ins) list = scaled_copies(list, r);
                                  }
                                  return gloo.reduce_scatter(outs, ins, gloo_options(r));
                                });
  return run(std::move(call), c10d::OpType::REDUCE_SCATTER, with_factor(flatten(inputs), r), outputs,
             kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(), "cncl reduce_scatter_tensor: the input has ",
                    input.numel(), " elements; it needs world_size (", getSize(), ") x the output's ", output.numel());
  TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(), "cncl reduce_scatter_tensor: output dtype ",
                    output.scalar_type(), " differs from input dtype ", input.scalar_type());
  Reduction r = plan_reduction("reduce_scatter_tensor", opts.reduceOp, input.scalar_type());
  Call call = scatter_reduction(
      "reduce_scatter_tensor", reduce_fingerprint(input, output.numel(), -1, opts.reduceOp),
      std::vector<at::Tensor>{host_alias(output)}, std::vector<at::Tensor>{host_alias(input)}, r, getSize(),
      [](c10d::Backend& gloo, std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins, const Reduction& r) {
        if (r.premul) ins = scaled_copies(ins, r);
        return gloo._reduce_scatter_base(outs[0], ins[0], gloo_options(r));
      });
  return run(std::move(call), c10d::OpType::_REDUCE_SCATTER_BASE, with_factor({input}, r), {output}, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const auto& t = first("reduce_scatter_tensor_coalesced", outputs);
  Reduction r = plan_reduction("reduce_scatter_tensor_coalesced", opts.reduceOp, t.scalar_type());
  Call call = scatter_reduction(
      "reduce_scatter_tensor", reduce_fingerprint(t, total_numel(outputs), -1, opts.reduceOp), host_aliases(outputs),
      host_aliases(inputs), r, getSize(),
      [](c10d::Backend& gloo, std::vector<at::Tensor>& outs, std::vector<at::Tensor>& ins, const Reduction& r) {
        if (r.premul) ins = scaled_copies(ins, r);
        return gloo.reduce_scatter_tensor_coalesced(outs, ins, gloo_options(r));
      });
  return run(std::move(call), c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, with_factor(inputs, r), outputs,
             kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_split_sizes,
                                                               std::vector<int64_t>& input_split_sizes,
                                                               const c10d::AllToAllOptions& opts) {
  const bool even = output_split_sizes.empty() && input_split_sizes.empty();
  Call call{"all_to_all_single",
            Fingerprint{static_cast<int64_t>(input.scalar_type()), even ? input.numel() : -1, -1, -1},
            [out = host_alias(output), in = host_alias(input), output_split_sizes, input_split_sizes,
             opts](c10d::Backend& gloo) mutable {
              return gloo.alltoall_base(out, in, output_split_sizes, input_split_sizes, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::ALLTOALL_BASE, {input}, {output}, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  const auto& t = first("all_to_all", inputs);
  Call call{"all_to_all", Fingerprint{static_cast<int64_t>(t.scalar_type()), -1, -1, -1},
            [outs = host_aliases(outputs), ins = host_aliases(inputs), opts](c10d::Backend& gloo) mutable {
              return gloo.alltoall(outs, ins, opts);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::ALLTOALL, inputs, outputs, kCollectiveStream);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  TORCH_CHECK_VALUE(dst_rank >= 0 && dst_rank < getSize() && dst_rank != getRank(),
                    "cncl send: invalid destination rank ", dst_rank, " (world size ", getSize(), ", this rank ",
                    getRank(), ")");
  Call call{"send", std::nullopt,
            [hosts = host_aliases(tensors), dst_rank, tag](c10d::Backend& gloo) mutable {
              return gloo.send(hosts, dst_rank, tag);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::SEND, tensors, {}, send_stream(dst_rank));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  TORCH_CHECK_VALUE(src_rank >= 0 && src_rank < getSize() && src_rank != getRank(), "cncl recv: invalid source rank ",
                    src_rank, " (world size ", getSize(), ", this rank ", getRank(), ")");
  Call call{"recv", std::nullopt,
            [hosts = host_aliases(tensors), src_rank, tag](c10d::Backend& gloo) mutable {
              return gloo.recv(hosts, src_rank, tag);
            },
            nullptr};
  return run(std::move(call), c10d::OpType::RECV, {}, tensors, recv_stream(src_rank));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCNCL::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  Call call{
      "recv", std::nullopt,
      [hosts = host_aliases(tensors), tag](c10d::Backend& gloo) mutable { return gloo.recvAnysource(hosts, tag); },
      nullptr};
  return run(std::move(call), c10d::OpType::RECVANYSOURCE, {}, tensors, recv_stream(getSize()));
}

}  // namespace torch_mlu::distributed
