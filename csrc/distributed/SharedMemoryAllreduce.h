// SharedMemoryAllreduce: cncl's all-reduce between the ranks of one host,
// through a shared-memory segment instead of Gloo's TCP connections.
//
// Note [cncl shared-memory all-reduce]
// Ranks on one host reach each other through loopback TCP under Gloo: every
// byte crosses the kernel twice per hop, and on a host whose cores also run
// the ranks' compute, that copying is the step's largest cost after the
// compute itself (a 25 MB DDP bucket took ~30 ms between 2 ranks). NCCL moves
// such traffic through shared memory (its SHM transport); so does cncl, for
// all_reduce and all_reduce_coalesced (dense tensors, taken as flat memory)
// with SUM, PRODUCT, MIN, MAX (AVG and PREMUL_SUM through SUM, as over Gloo)
// and the bitwise ops, of the floating and integer dtypes (not bool). Every
// other collective, dtype or op stays on Gloo, in the same stream order.
//
// Who uses it: a group whose ranks all share the boot, the network and pid
// namespaces and /dev/shm (the "host identity"; ranks in different network
// namespaces are different hosts, as tools/netns_hosts.py makes them), unless
// CNCL_SHM_DISABLE=1 (or NCCL_SHM_DISABLE=1) on any rank. The ranks agree at
// the group's creation through its store, so a segment that cannot be made or
// mapped on one rank leaves the whole group on Gloo.
//
// The segment: one state line per rank (three epoch counters and its pid),
// then two buffers of one slot per rank. A tensor goes through in chunks of up
// to a slot; chunk e (epochs count from 1, the same on every rank, since the
// ranks run the group's collectives in one order) uses buffer e % 2 and takes:
//   1. wait until every rank is `done` with chunk e - 2 (the buffer is free);
//      copy this rank's chunk into its slot; publish `arrived` = e;
//   2. wait for every rank's `arrived`; reduce this rank's share of the chunk
//      (a 1/size slice) into its own slot's slice: its own values, then the
//      peers' in rank order;
//      publish `reduced` = e;
//   3. wait for every rank's `reduced`; copy every rank's reduced slice out;
//      publish `done` = e.
// Each slice is reduced by one rank, so every rank ends with the same bits.
// Waits spin briefly, then sleep on a futex of the counter; a waiting rank
// notices a peer that has exited (its pid is gone or a zombie), the group's
// abort(), and its deadline (the group's timeout + Gloo's margin: the watchdog
// reports first), and fails the transfer with a message naming the peer. The
// segment's name is unlinked once every rank has mapped it, so nothing
// outlives the processes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace torch_mlu::distributed {

class SharedMemoryAllreduce {
 public:
  // Collective over the group's store (every rank of the group calls it at
  // the group's creation): the transport, or null where the group stays on
  // Gloo (one rank, ranks on several hosts, disabled, or no segment).
  static std::shared_ptr<SharedMemoryAllreduce> connect(c10d::Store& store, int rank, int size);
  ~SharedMemoryAllreduce();
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  // Whether all_reduce of this dtype with this (Gloo-level) op goes through here.
  static bool supports(c10::ScalarType dtype, c10d::ReduceOp::RedOpType op);
  // Reduces `host` (a contiguous CPU alias of device memory) in place with
  // the group's peers; throws std::runtime_error when a peer exits, the group
  // is aborted, or `wait_limit` passes without a peer's progress.
  void allreduce(const at::Tensor& host, c10d::ReduceOp::RedOpType op, std::chrono::milliseconds wait_limit);
  // Makes every wait in progress or to come fail at once.
  void abort() { aborted_ = true; }

  size_t slot_bytes() const { return slot_bytes_; }

 private:
  struct RankState;
  SharedMemoryAllreduce(int rank, int size, void* base, size_t bytes, size_t slot_bytes);
  static size_t header_bytes(int size);
  RankState& state(int rank) const;
  std::byte* slot(uint32_t epoch, int rank) const;
  // Waits until every rank's `counter` (a member of RankState) reaches `target`.
  void wait_all(std::atomic<uint32_t> RankState::*counter, uint32_t target, const char* step,
                std::chrono::steady_clock::time_point deadline) const;
  void publish(std::atomic<uint32_t> RankState::*counter, uint32_t value) const;
  void reduce_slice(uint32_t epoch, size_t offset, size_t bytes, c10::ScalarType dtype,
                    c10d::ReduceOp::RedOpType op) const;

  const int rank_, size_;
  void* base_;
  const size_t bytes_, slot_bytes_;
  uint32_t epoch_ = 0;  // the last chunk this rank took part in
  std::atomic<bool> aborted_{false};
};

}  // namespace torch_mlu::distributed
