#include "registry.h"

#include <map>
#include <mutex>
#include <shared_mutex>

namespace mlu::detail {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::map<uintptr_t, Allocation> by_base;
};

Registry& registry() {
  static auto* r = new Registry();  // outlives device threads at exit
  return *r;
}

}  // namespace

void register_allocation(const Allocation& allocation) {
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.by_base[allocation.base] = allocation;
}

std::optional<Allocation> unregister_allocation(const void* ptr) {
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.by_base.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == r.by_base.end()) return std::nullopt;
  Allocation found = it->second;
  r.by_base.erase(it);
  return found;
}

std::optional<Allocation> find_allocation(const void* ptr) {
  Registry& r = registry();
  auto address = reinterpret_cast<uintptr_t>(ptr);
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.by_base.upper_bound(address);
  if (it == r.by_base.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  // A zero-size range still owns its base address.
  if (address == a.base || address < a.base + a.size) return a;
  return std::nullopt;
}

}  // namespace mlu::detail
