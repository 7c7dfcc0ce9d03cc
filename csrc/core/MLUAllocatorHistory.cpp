#include "csrc/core/MLUAllocatorHistory.h"

namespace torch_mlu {

void TraceRing::push(TraceEntry entry, size_t max_entries) {
  if (max_entries == 0) return;
  if (entries_.size() < max_entries) {
    entries_.push_back(std::move(entry));
    return;
  }
  if (next_ >= entries_.size()) next_ = 0;
  entries_[next_++] = std::move(entry);
}

std::vector<TraceEntry> TraceRing::ordered() const {
  std::vector<TraceEntry> out;
  out.reserve(entries_.size());
  size_t start = next_ < entries_.size() ? next_ : 0;
  for (size_t i = 0; i < entries_.size(); ++i) out.push_back(entries_[(start + i) % entries_.size()]);
  return out;
}

void TraceRing::clear() {
  entries_.clear();
  next_ = 0;
}

}  // namespace torch_mlu
