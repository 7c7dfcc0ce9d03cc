#include "csrc/distributed/FlightRecorderCNCL.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <c10/util/Exception.h>
#include <c10/util/thread_name.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include "csrc/distributed/CNCLConfig.h"

namespace torch_mlu::distributed {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// (c10d/TraceUtils.h has these, but formats with fmt, whose symbols torch does not export.)
c10::Dict<c10::IValue, c10::IValue> new_dict() {
  return c10::Dict<c10::IValue, c10::IValue>(c10::AnyType::get(), c10::AnyType::get());
}

c10::List<c10::IValue> new_list() { return c10::List<c10::IValue>(c10::AnyType::get()); }

std::string pickle_str(const c10::IValue& value) {
  std::string result;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { result.append(data, size); }, nullptr, nullptr,
                              nullptr, nullptr, false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  return result;
}

const char* state_name(int state) {
  static const char* const kNames[] = {"scheduled", "started", "completed"};
  return kNames[state];
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

c10::List<c10::IValue> sizes_list(const std::vector<std::vector<int64_t>>& all) {
  auto list = new_list();
  for (const auto& sizes : all) list.push_back(c10::IValue(c10::List<int64_t>(sizes)));
  return list;
}

c10::List<c10::IValue> strings_list(const std::vector<std::string>& all) {
  auto list = new_list();
  for (const auto& s : all) list.push_back(c10::IValue(s));
  return list;
}

std::string dump_prefix() {
  for (const char* name :
       {"TORCH_CNCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  std::string cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    cache = xdg;
  } else {
    const char* home = std::getenv("HOME");
    cache = std::string(home != nullptr && *home != '\0' ? home : "/tmp") + "/.cache";
  }
  return cache + "/torch/comm_lib_trace_rank_";
}

}  // namespace

FlightRecorderCNCL& FlightRecorderCNCL::get() {
  static auto* recorder = new FlightRecorderCNCL();  // leaked: device threads may record during exit
  return *recorder;
}

FlightRecorderCNCL::FlightRecorderCNCL() : capacity_(static_cast<size_t>(cncl_config().trace_buffer_size)) {}

std::optional<uint64_t> FlightRecorderCNCL::record(const Group& group, int64_t collective_seq_id, int64_t p2p_seq_id,
                                                   int64_t op_id, std::string profiling_name,
                                                   const std::vector<at::Tensor>& inputs,
                                                   const std::vector<at::Tensor>& outputs,
                                                   std::chrono::milliseconds timeout, bool is_p2p) {
  if (!enabled()) return std::nullopt;
  Entry entry;
  entry.pg_id = group.pg_id;
  entry.collective_seq_id = collective_seq_id;
  entry.p2p_seq_id = p2p_seq_id;
  entry.op_id = op_id;
  entry.profiling_name = std::move(profiling_name);
  entry.traceback = torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
  entry.time_created_ns = now_ns();
  entry.timeout_ms = timeout.count();
  entry.is_p2p = is_p2p;
  for (const auto* list : {&inputs, &outputs}) {
    auto& sizes = list == &inputs ? entry.input_sizes : entry.output_sizes;
    auto& dtypes = list == &inputs ? entry.input_dtypes : entry.output_dtypes;
    for (const auto& t : *list) {
      sizes.push_back(t.sizes().vec());
      dtypes.emplace_back(c10::toString(t.scalar_type()));
    }
  }
  std::ostringstream thread_id;
  thread_id << std::this_thread::get_id();
  entry.thread_id = thread_id.str();
  entry.thread_name = c10::getThreadName();

  std::lock_guard<std::mutex> lock(mutex_);
  entry.id = next_id_++;
  auto [it, inserted] = groups_.try_emplace(group.pg_id, GroupStatus{group});
  if (!is_p2p) it->second.last_enqueued = collective_seq_id;
  const uint64_t id = entry.id;
  if (entries_.size() < capacity_) {
    entries_.push_back(std::move(entry));
  } else {
    entries_[next_] = std::move(entry);
    next_ = (next_ + 1) % capacity_;
  }
  return id;
}

FlightRecorderCNCL::Entry* FlightRecorderCNCL::find(uint64_t id) {
  if (entries_.empty()) return nullptr;
  // Ids are consecutive in ring order: the oldest sits at next_ once the ring is full.
  const size_t oldest = entries_.size() < capacity_ ? 0 : next_;
  const uint64_t first_id = entries_[oldest].id;
  if (id < first_id || id - first_id >= entries_.size()) return nullptr;
  return &entries_[(oldest + (id - first_id)) % entries_.size()];
}

void FlightRecorderCNCL::started(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return;
  const int64_t now = now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint64_t id : ids) {
    Entry* entry = find(id);
    if (entry == nullptr || entry->state != State::kScheduled) continue;
    entry->state = State::kStarted;
    entry->time_started_ns = now;
    if (!entry->is_p2p) groups_[entry->pg_id].last_started = entry->collective_seq_id;
  }
}

void FlightRecorderCNCL::completed(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return;
  const int64_t now = now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint64_t id : ids) {
    Entry* entry = find(id);
    if (entry == nullptr || entry->state == State::kCompleted) continue;
    if (!entry->time_started_ns) entry->time_started_ns = now;
    entry->state = State::kCompleted;
    entry->time_completed_ns = now;
    if (!entry->is_p2p) groups_[entry->pg_id].last_completed = entry->collective_seq_id;
  }
}

std::string FlightRecorderCNCL::dump(bool include_collectives, bool include_stack_traces, bool only_active) {
  std::vector<Entry> entries;
  std::map<int64_t, GroupStatus> groups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t oldest = entries_.size() < capacity_ ? 0 : next_;
    for (size_t i = 0; i < entries_.size(); ++i) entries.push_back(entries_[(oldest + i) % entries_.size()]);
    groups = groups_;
  }
  auto result = new_dict();
  result.insert("version", "2.10");
  result.insert("comm_lib_version", "cncl (over Gloo)");
  auto pg_config = new_dict();
  auto pg_status = new_dict();
  for (const auto& [pg_id, status] : groups) {
    auto config = new_dict();
    config.insert("name", status.group.name);
    config.insert("desc", status.group.desc);
    config.insert("ranks", ranks_text(status.group.ranks));
    pg_config.insert(status.group.name, config);
    auto progress = new_dict();
    progress.insert("last_enqueued_collective", status.last_enqueued);
    progress.insert("last_started_collective", status.last_started);
    progress.insert("last_completed_collective", status.last_completed);
    pg_status.insert(std::to_string(pg_id), progress);
  }
  result.insert("pg_config", pg_config);
  result.insert("pg_status", pg_status);
  if (!include_collectives) return pickle_str(result);

  // Python frames are symbolized here, not at record time (it needs the GIL, which symbolize takes).
  std::vector<torch::CapturedTraceback*> tracebacks;
  if (include_stack_traces) {
    for (const auto& e : entries) tracebacks.push_back(e.traceback.get());
  }
  const torch::SymbolizedTracebacks symbolized = torch::symbolize(tracebacks);
  auto list = new_list();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (only_active && e.state == State::kCompleted) continue;
    const auto& group = groups.at(e.pg_id).group;
    auto dict = new_dict();
    dict.insert("record_id", static_cast<int64_t>(e.id));
    dict.insert("pg_id", e.pg_id);
    dict.insert("process_group", std::make_tuple(group.name, group.desc));
    dict.insert("collective_seq_id", e.collective_seq_id);
    dict.insert("p2p_seq_id", e.p2p_seq_id);
    dict.insert("op_id", e.op_id);
    dict.insert("profiling_name", e.profiling_name);
    dict.insert("time_created_ns", e.time_created_ns);
    dict.insert("input_sizes", sizes_list(e.input_sizes));
    dict.insert("input_dtypes", strings_list(e.input_dtypes));
    dict.insert("output_sizes", sizes_list(e.output_sizes));
    dict.insert("output_dtypes", strings_list(e.output_dtypes));
    dict.insert("state", state_name(static_cast<int>(e.state)));
    dict.insert("time_discovered_started_ns", e.time_started_ns ? c10::IValue(*e.time_started_ns) : c10::IValue());
    dict.insert("time_discovered_completed_ns",
                e.time_completed_ns ? c10::IValue(*e.time_completed_ns) : c10::IValue());
    dict.insert("duration_ms", (e.time_started_ns && e.time_completed_ns)
                                   ? c10::IValue((*e.time_completed_ns - *e.time_started_ns) / 1e6)
                                   : c10::IValue());
    dict.insert("retired", e.state == State::kCompleted);
    dict.insert("timeout_ms", e.timeout_ms);
    dict.insert("is_p2p", e.is_p2p);
    dict.insert("thread_id", e.thread_id);
    dict.insert("thread_name", e.thread_name);
    auto frames = new_list();
    if (include_stack_traces) {
      for (uint64_t frame_id : symbolized.tracebacks.at(i)) {
        const auto& frame = symbolized.all_frames.at(frame_id);
        auto f = new_dict();
        f.insert("name", frame.funcname);
        f.insert("filename", frame.filename);
        f.insert("line", static_cast<int64_t>(frame.lineno));
        frames.push_back(f);
      }
    }
    dict.insert("frames", frames);
    list.push_back(dict);
  }
  result.insert("entries", list);
  return pickle_str(result);
}

std::string FlightRecorderCNCL::write_dump(int64_t global_rank, bool include_stack_traces) {
  const std::string path = dump_prefix() + std::to_string(global_rank);
  const std::string trace = dump(true, include_stack_traces, false);
  const auto folder = std::filesystem::path(path).parent_path();
  std::error_code ignored;
  if (!folder.empty()) std::filesystem::create_directories(folder, ignored);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  TORCH_CHECK(file.good(), "cncl flight recorder: cannot open ", path, " for writing");
  file.write(trace.data(), static_cast<std::streamsize>(trace.size()));
  file.close();
  TORCH_CHECK(file.good(), "cncl flight recorder: writing ", path, " failed");
  return path;
}

}  // namespace torch_mlu::distributed
