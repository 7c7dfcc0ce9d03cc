#include "csrc/distributed/WatchdogCNCL.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <c10/util/Exception.h>
#include <c10/util/thread_name.h>
#include <map>

#include "csrc/distributed/CNCLConfig.h"
#include "csrc/distributed/FlightRecorderCNCL.h"

namespace torch_mlu::distributed {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kDumpPoll = std::chrono::seconds(1);
const char* const kTraceGroup = "CNCL";  // the desync keys' group name (NCCL's is "NCCL")
const char* const kDumpSignal = "cncl_dump_signal";

void log_line(const std::string& text) {
  const std::string line = "[cncl] " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::string dump_ack_key(int rank) { return "cncl_dump_done_" + std::to_string(rank); }

std::exception_ptr dist_backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

// The progress keys and values of NCCL's desync debugger (c10d/TraceUtils.h, whose functions format with fmt,
// which torch does not export): "<group>_<rank>_trace_start" / "_trace_end" hold the sequence number (8 bytes)
// and the op's name (NUL-terminated).
std::string trace_key(int rank, const char* which) { return c10::str(kTraceGroup, "_", rank, "_trace_", which); }

void trace_update(c10d::Store& store, const std::string& key, int64_t seq, const std::string& op) {
  std::vector<uint8_t> value(sizeof(uint64_t) + op.size() + 1, 0);
  const uint64_t s = static_cast<uint64_t>(seq);
  std::memcpy(value.data(), &s, sizeof(s));
  std::memcpy(value.data() + sizeof(s), op.data(), op.size());
  store.set(key, value);
}

// A rank's published (sequence number, op), if it published one.
std::optional<std::pair<int64_t, std::string>> trace_read(c10d::Store& store, const std::string& key) {
  if (!store.check({key})) return std::nullopt;
  const std::vector<uint8_t> value = store.get(key);
  if (value.size() < sizeof(uint64_t) + 1) return std::nullopt;
  uint64_t seq = 0;
  std::memcpy(&seq, value.data(), sizeof(seq));
  return std::make_pair(static_cast<int64_t>(seq), std::string(reinterpret_cast<const char*>(value.data()) + 8));
}

// NCCL's desync report (c10d::retrieveDesyncReport), from the same keys and in the same words.
std::string desync_report(c10d::Store& store, int my_rank, int size) {
  std::vector<int> never_joined;
  // seq -> rank -> (op, finished)
  std::map<int64_t, std::map<int, std::pair<std::string, bool>>> traces;
  for (int r = 0; r < size; ++r) {
    const auto start = trace_read(store, trace_key(r, "start"));
    if (!start) {
      never_joined.push_back(r);
      continue;
    }
    const auto end = trace_read(store, trace_key(r, "end"));
    traces[start->first][r] = {start->second, end && end->first == start->first};
  }
  std::string report;
  for (const auto& [seq, ranks] : traces) {
    if (auto it = ranks.find(my_rank); it != ranks.end()) {
      report += c10::str("\n\t - [", my_rank, "] Timeout at collective: ", it->second.first, ", #", seq);
    }
  }
  if (!never_joined.empty()) {
    report += c10::str("\n\t - To our best knowledge, ranks ", ranks_text(never_joined),
                       " are the lagging ranks that caused this timeout. They never joined any collectives");
  } else if (!traces.empty()) {
    const auto& [seq, ranks] = *traces.begin();
    std::vector<int> unfinished, finished;
    for (const auto& [r, trace] : ranks) (trace.second ? finished : unfinished).push_back(r);
    report += "\n\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:";
    if (!unfinished.empty()) {
      report += c10::str("\n\t   - ", ranks_text(unfinished), " joined but didn't finish collective #", seq,
                         " (count from 1)");
    }
    if (!finished.empty()) {
      report += c10::str("\n\t     ", ranks_text(finished), " finished collective #", seq,
                         ", but didn't join collective #", seq + 1, " (count from 1)");
    }
  }
  report += "\n\t - Snapshot of ranks' latest states:";
  for (const auto& [seq, ranks] : traces) {
    for (bool finished : {false, true}) {
      std::vector<int> who;
      std::string op;
      for (const auto& [r, trace] : ranks) {
        if (trace.second == finished) {
          who.push_back(r);
          op = trace.first;
        }
      }
      if (who.empty()) continue;
      report += c10::str("\n\t   #", seq, finished ? " finished ranks:" : " started ranks:", "\n\t     ",
                         ranks_text(who), finished ? " finished " : " started ", op);
    }
  }
  return report;
}

}  // namespace

WatchdogCNCL::WatchdogCNCL(Group group, std::function<void(const std::string&)> break_group)
    : group_(std::move(group)), break_group_(std::move(break_group)) {}

WatchdogCNCL::~WatchdogCNCL() { stop(); }

void WatchdogCNCL::watch(Watched watched) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  if (!thread_.joinable()) {
    next_dump_poll_ = Clock::now() + kDumpPoll;
    thread_ = std::thread([this] { run(); });
    if (cncl_config().enable_monitoring) monitor_thread_ = std::thread([this] { monitor(); });
  }
  watched_.push_back(std::move(watched));
}

void WatchdogCNCL::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (monitor_thread_.joinable()) monitor_thread_.join();
}

void WatchdogCNCL::abort(std::exception_ptr error, const std::string& message) {
  stop();
  std::vector<Watched> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works.swap(watched_);
  }
  for (const auto& w : works) w.signal->finish(error, message, -1, /*breaks_group=*/true);
}

void WatchdogCNCL::run() {
  c10::setThreadName("pt_cncl_watchdg");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, kTick, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    ++heartbeat_;
    check_works();
    publish_progress();
    poll_dump_signal();
    lock.lock();
  }
}

void WatchdogCNCL::monitor() {
  c10::setThreadName("pt_cncl_heartbt");
  const auto limit = std::chrono::seconds(cncl_config().heartbeat_timeout_sec);
  uint64_t seen = heartbeat_.load();
  auto last_change = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, std::min<Clock::duration>(limit, std::chrono::seconds(1)), [this] { return stopping_; });
    if (stopping_) break;
    const uint64_t now = heartbeat_.load();
    if (now != seen) {
      seen = now;
      last_change = Clock::now();
      continue;
    }
    if (Clock::now() - last_change < limit) continue;
    lock.unlock();
    log_line(c10::str("[Rank ", group_.rank, "] the cncl watchdog got stuck for ", limit.count(),
                      " seconds without making progress in monitoring enqueued collectives (a store or a dump "
                      "that stopped answering); terminating the process (TORCH_CNCL_HEARTBEAT_TIMEOUT_SEC, "
                      "TORCH_CNCL_ENABLE_MONITORING=0 turns this off)"));
    write_dump("the watchdog is stuck");
    std::abort();
  }
}

void WatchdogCNCL::check_works() {
  std::vector<Watched> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works = watched_;
  }
  const auto now = Clock::now();
  std::vector<const CommSignal*> finished;
  for (const auto& w : works) {
    const bool done = w.signal->is_done();
    if (!w.is_p2p && (done || w.signal->started.load()) && w.seq > started_seq_) {
      started_seq_ = w.seq;
      started_op_ = w.op;
    }
    if (done) {
      if (!w.is_p2p && w.seq > completed_seq_) {
        completed_seq_ = w.seq;
        completed_op_ = w.op;
      }
      bool failed;
      {
        std::lock_guard<std::mutex> lock(w.signal->mutex);
        failed = w.signal->error && w.signal->breaks_group;
      }
      if (failed) handle(w, /*timed_out=*/false);
      finished.push_back(w.signal.get());
    } else if (w.signal->failure_pending.load()) {
      handle(w, /*timed_out=*/false);
    } else if (now - w.enqueued > w.timeout) {
      handle(w, /*timed_out=*/true);
    }
  }
  if (finished.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(watched_, [&](const Watched& w) {
    return std::find(finished.begin(), finished.end(), w.signal.get()) != finished.end();
  });
}

void WatchdogCNCL::handle(const Watched& watched, bool timed_out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (handled_) return;
    handled_ = true;
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - watched.enqueued).count();
  std::string message;
  if (timed_out) {
    message = c10::str("[Rank ", group_.rank, "] Watchdog caught collective operation timeout: ", watched.summary,
                       " ran for ", elapsed, " milliseconds before timing out.");
  } else {
    std::lock_guard<std::mutex> lock(watched.signal->mutex);
    message = c10::str("[Rank ", group_.rank, "] failure detected by watchdog at work sequence id: ", watched.seq, " (",
                       watched.summary, "): ", watched.signal->error_message);
  }
  if (!watched.is_p2p) {
    if (timed_out && watched.seq > started_seq_) {
      started_seq_ = watched.seq;  // what this rank entered, for the reports
      started_op_ = watched.op;
    }
    publish_progress();
    message += peers_report(watched.seq, watched.op);
    if (cncl_config().desync_debug && group_.store) {
      try {
        message += c10::str("\nDesync report (TORCH_CNCL_DESYNC_DEBUG):",
                            desync_report(*group_.store, group_.rank, group_.size));
      } catch (const std::exception& e) {
        message += c10::str("\nThe desync report failed: ", e.what());
      }
    }
  }
  log_line(message);
  const CNCLConfig& config = cncl_config();
  const bool teardown = config.async_error_handling == 1 || config.async_error_handling == 3;
  if (!teardown) {
    // Fail the Work first: the caller learns of it now, not after the other ranks' dumps.
    break_group_(message);
    if (timed_out) watched.signal->finish(dist_backend_error(message), message, -1, /*breaks_group=*/true);
  }
  if (config.dump_on_timeout && FlightRecorderCNCL::get().enabled()) dump_everywhere();
  if (teardown) {
    log_line(c10::str("[Rank ", group_.rank, "] cncl ", watched.op,
                      " failed; terminating the process "
                      "(TORCH_CNCL_ASYNC_ERROR_HANDLING=",
                      config.async_error_handling, ")"));
    std::abort();
  }
}

void WatchdogCNCL::publish_progress() {
  if (!group_.store) return;
  try {
    if (started_seq_ != published_started_) {
      trace_update(*group_.store, trace_key(group_.rank, "start"), started_seq_, started_op_);
      published_started_ = started_seq_;
    }
    if (completed_seq_ != published_completed_) {
      trace_update(*group_.store, trace_key(group_.rank, "end"), completed_seq_, completed_op_);
      published_completed_ = completed_seq_;
    }
  } catch (const std::exception&) {
    // The store is gone (its server's rank ended): the next tick tries again; reports say the store failed.
  }
}

std::string WatchdogCNCL::peers_report(int64_t seq, const std::string& op) {
  if (!group_.store) return "";
  std::vector<int> joined, missing;
  try {
    for (int r = 0; r < group_.size; ++r) {
      const auto theirs = trace_read(*group_.store, trace_key(r, "start"));
      (theirs && theirs->first >= seq ? joined : missing).push_back(r);
    }
  } catch (const std::exception& e) {
    return c10::str("\nThe other ranks' progress is unknown: the store failed (", e.what(), ").");
  }
  if (missing.empty()) {
    return c10::str("\nEvery rank of the group had entered collective #", seq, " (", op,
                    "): the transfer itself stalled or a rank stopped inside it.");
  }
  return c10::str("\nRanks ", ranks_text(missing), " of the group had not entered collective #", seq, " (", op,
                  ") by the last progress they published; ranks ", ranks_text(joined),
                  " had. Check what those ranks were doing (their flight recorder dumps, or their last logs).");
}

void WatchdogCNCL::poll_dump_signal() {
  if (!group_.store || !FlightRecorderCNCL::get().enabled() || Clock::now() < next_dump_poll_) return;
  next_dump_poll_ = Clock::now() + kDumpPoll;
  try {
    auto store = group_.store;
    if (!store->check({kDumpSignal}) || store->check({dump_ack_key(group_.rank)})) return;
    const auto value = store->get(kDumpSignal);
    log_line(c10::str("[Rank ", group_.rank, "] rank ", std::string(value.begin(), value.end()),
                      " asked for flight recorder dumps"));
    write_dump("another rank's request");
    store->set(dump_ack_key(group_.rank), std::string("1"));
  } catch (const std::exception& e) {
    log_line(c10::str("[Rank ", group_.rank, "] could not answer a flight recorder dump request: ", e.what()));
  }
}

void WatchdogCNCL::dump_everywhere() {
  write_dump("this rank's failure");
  if (!group_.store) return;
  try {
    auto store = group_.store;
    store->set(dump_ack_key(group_.rank), std::string("1"));
    store->set(kDumpSignal, std::to_string(group_.rank));
    const auto deadline = Clock::now() + std::chrono::milliseconds(cncl_config().wait_timeout_dump_ms);
    std::vector<std::string> acks;
    for (int r = 0; r < group_.size; ++r) acks.push_back(dump_ack_key(r));
    while (!store->check(acks) && Clock::now() < deadline) std::this_thread::sleep_for(kTick);
  } catch (const std::exception& e) {
    log_line(c10::str("[Rank ", group_.rank, "] could not ask the other ranks for their dumps: ", e.what()));
  }
}

void WatchdogCNCL::write_dump(const char* why) {
  try {
    const std::string path = FlightRecorderCNCL::get().write_dump(group_.global_rank);
    log_line(c10::str("[Rank ", group_.rank, "] flight recorder dumped to ", path, " (", why,
                      "); read the ranks' dumps with: python -m torch.distributed.flight_recorder.fr_trace <dir> "
                      "-p <prefix>"));
  } catch (const std::exception& e) {
    log_line(c10::str("[Rank ", group_.rank, "] the flight recorder dump failed: ", e.what()));
  }
}

}  // namespace torch_mlu::distributed
