// Device monitoring across processes: what `mlu-smi` and torch.mlu.utilization()
// read.
//
// Note [Monitor registry]
// Every process that uses the software MLU keeps one small record in a
// shared-memory directory (TORCH_MLU_MONITOR_DIR, default
// /dev/shm/torch_mlu_monitor-<uid>, mode 0700): its pid, start time and
// command line, and per physical device the device memory it holds, its live
// queues, how many of them have work in flight, and how long the device was
// busy in each of the last ten 100 ms buckets. The runtime keeps the record
// current as it works (relaxed atomics in a mapped file; the busy buckets under
// a sequence lock), so a reader in any process sees live values without asking
// the process anything.
// - A record appears (created under a temporary name, then renamed) when the
//   process first creates a queue or reserves device memory, like a CUDA
//   context: a process that only queries devices is not listed.
// - It is removed when the process exits normally. A process that dies
//   (SIGKILL, os._exit) leaves it behind; readers treat a record whose pid is
//   gone, or now belongs to a process started at another time, as dead and
//   delete it.
// - A child forked after its parent created a record writes nothing to it
//   (Note [Forked children] in device.h) and creates its own if it may use
//   the runtime.
// - Busy time is the union over the process's queues of the time they had
//   work: a queue is busy from when its device thread (or an inline launch,
//   Note [Small tasks run inline]) picks up a task until it runs out of work.
//   A device's utilization is the busy share of the last second, summed over
//   processes and capped at 100%.
// - Capacity is shared: Note [Shared device capacity].
// TORCH_MLU_MONITOR=0 turns the record off for a process. Failing to create
// the record (no /dev/shm, a read-only directory) never fails the runtime:
// the process is just not listed.
//
// Note [Shared device capacity]
// As on hardware, the processes of a machine using one physical device share
// its capacity: a reservation of device memory fits only if this process's
// use, plus what every other process's record holds on the device, plus the
// request stays within the capacity, so a second process on a "full" device
// gets the out-of-memory error, and mluMemGetInfo's free memory is what is
// left for everyone. Reservations of one physical device are serialized
// across processes by an exclusive flock on `capacity-<physical>.lock` in the
// registry directory, held while the others' records are summed and this
// process's record is charged. Records of processes whose configured capacity
// for the device differs (another TORCH_MLU_DEVICE_MEMORY: another machine
// description) are not counted. A dead process's memory comes back: when the
// sum does not fit, the records are read again checking their writers, and
// dead ones are deleted. Off (each process its own capacity, as before) with
// TORCH_MLU_SHARED_CAPACITY=0, or when this process has no record
// (TORCH_MLU_MONITOR=0, no shared-memory directory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlu_runtime/status.h"

namespace mlu {

// One process's use of one device.
struct mluMonitorProcess {
  int pid = 0;
  std::string command;     // command line, truncated
  size_t memory_used = 0;  // device memory the process holds (its caching allocator's reserve)
  int queues = 0;          // live queues (streams) on the device
  int busy_queues = 0;     // of which have work in flight
  double utilization = 0;  // busy share of the last second, 0..1
};

// One physical device, as seen by every process using it.
struct mluMonitorDevice {
  int physical_id = 0;
  std::string name;
  size_t capacity = 0;     // bytes
  size_t memory_used = 0;  // summed over processes
  int queues = 0;
  int busy_queues = 0;
  double utilization = 0;  // summed over processes, capped at 1
  std::vector<mluMonitorProcess> processes;  // those with memory or queues on the device
};

// Reads every live record (deleting dead processes' records). `devices` gets
// one entry per physical device of this process's configuration
// (TORCH_MLU_DEVICE_COUNT), and for any further physical device a record
// mentions. Never starts the runtime or creates a record.
mluError_t mluMonitorSnapshot(std::vector<mluMonitorDevice>* devices);

// The directory of the records (Note [Monitor registry]).
std::string mluMonitorDirectory();

}  // namespace mlu
