// Note [Fault injection] (mlu_runtime/fault.h): parsing the rules and deciding.
#include "mlu_runtime/fault.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "error_state.h"
#include "fault_state.h"

namespace mlu::detail {
namespace {

enum class Target { DeviceAlloc, HostAlloc, Kernel, Copy, Delay, Capacity, Corrupt };

struct Rule {
  Target target;
  uint64_t nth = 0;        // the count that fires (1-based); 0 with a name: every match
  bool and_later = false;  // "N+": every count from nth on
  std::string name;        // kernel:NAME
  uint64_t value = 0;      // delay ms, capacity bytes
  std::string reason;      // the message a failure carries
  std::atomic<uint64_t> seen{0};
};

// Rule sets are replaced whole and never freed: a task launched under an old
// set keeps pointing at its rule's reason. They are a few bytes each.
struct RuleSet {
  std::string spec;
  std::vector<std::unique_ptr<Rule>> rules;
  int delay_ms = 0;
  size_t capacity = SIZE_MAX;
  bool corrupts = false;  // any corrupt: rule
};

std::atomic<RuleSet*> g_rules{nullptr};
std::atomic<uint64_t> g_fired{0};
std::mutex g_set_mu;

const char* kGrammar =
    "use rules separated by ';': alloc:N[+], host_alloc:N[+], kernel:N[+], kernel:NAME[@N], copy:N[+], "
    "delay:MS, capacity:SIZE, corrupt:NAME[@N] (e.g. \"alloc:3;kernel:add@2\")";

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

bool parse_count(const std::string& text, uint64_t* count) {
  if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), ::isdigit)) return false;
  *count = std::stoull(text);
  return *count > 0;
}

// Parses one rule; "" on success, else the problem.
std::string parse_rule(const std::string& text, Rule* rule) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return "'" + text + "' has no ':'";
  const std::string key = trim(text.substr(0, colon));
  std::string arg = trim(text.substr(colon + 1));
  rule->reason = "injected fault (TORCH_MLU_FAULT_INJECT '" + key + ":" + arg + "')";
  auto counted = [&](Target target) -> std::string {
    rule->target = target;
    if (!arg.empty() && arg.back() == '+') {
      rule->and_later = true;
      arg.pop_back();
    }
    return parse_count(arg, &rule->nth) ? "" : "'" + text + "' needs a positive count";
  };
  if (key == "alloc") return counted(Target::DeviceAlloc);
  if (key == "host_alloc") return counted(Target::HostAlloc);
  if (key == "copy") return counted(Target::Copy);
  if (key == "kernel" || key == "corrupt") {
    if (key == "kernel" && !arg.empty() && std::isdigit(static_cast<unsigned char>(arg[0]))) {
      return counted(Target::Kernel);
    }
    rule->target = key == "kernel" ? Target::Kernel : Target::Corrupt;
    const size_t at = arg.rfind('@');
    rule->name = arg.substr(0, at);
    if (at != std::string::npos && !parse_count(arg.substr(at + 1), &rule->nth)) {
      return "'" + text + "': the count after '@' must be a positive integer";
    }
    return rule->name.empty() ? "'" + text + "' needs a name" + (key == "kernel" ? " or a count" : "") : "";
  }
  if (key == "delay") {
    rule->target = Target::Delay;
    if (!parse_count(arg, &rule->value) || rule->value > 60'000) return "'" + text + "': use 1 to 60000 ms";
    return "";
  }
  if (key == "capacity") {
    rule->target = Target::Capacity;
    rule->value = parse_byte_size(arg.c_str());
    return rule->value == 0 ? "'" + text + "': the size must be like 512M or 2G" : "";
  }
  return "'" + key + "' is not a rule";
}

// Parses `spec` into *set; "" on success.
std::string parse_spec(const char* spec, RuleSet* set) {
  set->spec = spec != nullptr ? spec : "";
  std::string rest = set->spec;
  std::replace(rest.begin(), rest.end(), ',', ';');
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t end = std::min(rest.find(';', start), rest.size());
    const std::string text = trim(rest.substr(start, end - start));
    start = end + 1;
    if (text.empty()) continue;
    auto rule = std::make_unique<Rule>();
    if (std::string problem = parse_rule(text, rule.get()); !problem.empty()) {
      return "TORCH_MLU_FAULT_INJECT: " + problem + "; " + kGrammar;
    }
    if (rule->target == Target::Delay) set->delay_ms = static_cast<int>(rule->value);
    if (rule->target == Target::Capacity) set->capacity = std::min<size_t>(set->capacity, rule->value);
    if (rule->target == Target::Corrupt) set->corrupts = true;
    set->rules.push_back(std::move(rule));
  }
  return "";
}

// Counts an event for `rule`; whether the rule fires on it.
bool fires(Rule& rule) {
  const uint64_t count = rule.seen.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool fire = rule.nth == 0 || count == rule.nth || (rule.and_later && count > rule.nth);
  if (fire) g_fired.fetch_add(1, std::memory_order_relaxed);
  return fire;
}

RuleSet* rules() { return g_rules.load(std::memory_order_acquire); }

// Every set ever installed, kept (reachable, so no leak checker flags them).
std::vector<std::unique_ptr<RuleSet>>& all_sets() {
  static auto* sets = new std::vector<std::unique_ptr<RuleSet>>();
  return *sets;
}

void install(std::unique_ptr<RuleSet> set) {
  std::lock_guard<std::mutex> lock(g_set_mu);
  g_fired.store(0);
  RuleSet* active = set->rules.empty() ? nullptr : set.get();
  all_sets().push_back(std::move(set));
  g_rules.store(active, std::memory_order_release);
}

// The rules of TORCH_MLU_FAULT_INJECT, once, before any other rule is read or
// set. A malformed value installs nothing here: the machine configuration
// reports it (config.cpp), and then no device can be used.
void install_environment_rules() {
  static const bool installed = [] {
    const char* spec = std::getenv("TORCH_MLU_FAULT_INJECT");
    auto set = std::make_unique<RuleSet>();
    if (spec != nullptr && parse_spec(spec, set.get()).empty()) install(std::move(set));
    return true;
  }();
  (void)installed;
}

}  // namespace

bool faults_active() {
  install_environment_rules();
  return g_rules.load(std::memory_order_relaxed) != nullptr;
}

const char* fault_for_task(TaskKind kind, const char* name) {
  RuleSet* set = rules();
  if (set == nullptr || (kind != TaskKind::Kernel && kind != TaskKind::Memcpy)) return nullptr;
  const Target target = kind == TaskKind::Kernel ? Target::Kernel : Target::Copy;
  const char* reason = nullptr;
  for (auto& rule : set->rules) {
    if (rule->target != target) continue;
    if (!rule->name.empty() && (name == nullptr || std::string(name).find(rule->name) == std::string::npos)) continue;
    if (fires(*rule) && reason == nullptr) reason = rule->reason.c_str();
  }
  return reason;
}

const char* fault_for_allocation(bool host) {
  RuleSet* set = rules();
  if (set == nullptr) return nullptr;
  const Target target = host ? Target::HostAlloc : Target::DeviceAlloc;
  const char* reason = nullptr;
  for (auto& rule : set->rules) {
    if (rule->target == target && fires(*rule) && reason == nullptr) reason = rule->reason.c_str();
  }
  return reason;
}

int fault_delay_ms() {
  RuleSet* set = rules();
  return set != nullptr ? set->delay_ms : 0;
}

size_t fault_capacity_limit() {
  RuleSet* set = faults_active() ? rules() : nullptr;
  return set != nullptr ? set->capacity : SIZE_MAX;
}

std::string check_fault_spec(const char* spec) {
  RuleSet scratch;
  return parse_spec(spec, &scratch);
}

}  // namespace mlu::detail

namespace mlu {
using namespace detail;

mluError_t mluFaultInjectSet(const char* spec) {
  install_environment_rules();  // so that it cannot replace these later
  auto set = std::make_unique<RuleSet>();
  if (std::string problem = parse_spec(spec, set.get()); !problem.empty()) {
    return fail(mluErrorInvalidValue, problem);
  }
  install(std::move(set));
  return mluSuccess;
}

std::string mluFaultInjectSpec() {
  install_environment_rules();
  RuleSet* set = rules();
  return set != nullptr ? set->spec : "";
}

uint64_t mluFaultInjectCount() { return g_fired.load(); }

bool mluFaultCorruptRulesActive() {
  RuleSet* set = faults_active() ? rules() : nullptr;
  return set != nullptr && set->corrupts;
}

bool mluFaultCorruptOp(const char* name) {
  RuleSet* set = rules();
  if (set == nullptr || !set->corrupts || name == nullptr) return false;
  bool corrupt = false;
  for (auto& rule : set->rules) {
    if (rule->target != Target::Corrupt || std::string(name).find(rule->name) == std::string::npos) continue;
    corrupt |= fires(*rule);
  }
  return corrupt;
}

}  // namespace mlu
