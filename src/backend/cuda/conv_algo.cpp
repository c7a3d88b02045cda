#include "ringtrain/backend/cuda/conv_algo.hpp"

namespace ringtrain {

std::optional<ConvChoice> pick_conv_algo(const std::vector<ConvCandidate>& candidates,
                                         std::size_t workspace_limit, bool deterministic) {
  const ConvCandidate *best = nullptr, *smallest = nullptr;
  for (const ConvCandidate& c : candidates) {
    if (!c.ok || (deterministic && !c.deterministic)) continue;
    if (!smallest || c.workspace < smallest->workspace) smallest = &c;
    if (c.workspace <= workspace_limit && (!best || c.time_ms < best->time_ms)) best = &c;
  }
  if (!best) best = smallest;
  if (!best) return std::nullopt;
  return ConvChoice{best->algo, best->math_type, best->workspace};
}

}  // namespace ringtrain
