#include "ringtrain/backend/cuda/conv_algo.hpp"

namespace ringtrain {

std::optional<ConvChoice> pick_conv_algo(const std::vector<ConvCandidate>& candidates,
                                         std::size_t workspace_limit, bool deterministic) {
  const ConvCandidate *best = nullptr, *smallest = nullptr;
  for (const ConvCandidate& c : candidates) {
    if (!c.ok || (deterministic && !c.deterministic)) continue;
    if (!smallest || c.workspace < smallest->workspace) smallest = &c;
    const bool better = !best || (!deterministic && c.time_ms < best->time_ms);
    if (c.workspace <= workspace_limit && better) best = &c;
  }
  if (!best) best = smallest;
  if (!best) return std::nullopt;
  return ConvChoice{best->algo, best->math_type, best->workspace, 0, best->time_ms};
}

std::vector<int> channels_to_try(int c) {
  std::vector<int> out{c};
  for (const int multiple : {4, 8}) {
    const int padded = (c + multiple - 1) / multiple * multiple;
    if (padded != out.back()) out.push_back(padded);
  }
  return out;
}

}  // namespace ringtrain
