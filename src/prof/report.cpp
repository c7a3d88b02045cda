#include "ringtrain/prof/report.hpp"

#include <cstdio>
#include <map>
#include <numeric>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

PhaseTimes phase_shares(const PhaseTimes& totals) {
  const double sum = std::accumulate(totals.begin(), totals.end(), 0.0);
  PhaseTimes shares{};
  if (sum > 0)
    for (int p = 0; p < kPhases; ++p) shares[p] = totals[p] / sum;
  return shares;
}

std::string main_bottleneck(const PhaseTimes& shares, double gpu_util_percent) {
  const double data = shares[static_cast<int>(Phase::data)] + shares[static_cast<int>(Phase::copy)];
  const double comm = shares[static_cast<int>(Phase::comm_wait)] +
                      shares[static_cast<int>(Phase::replicate)] +
                      shares[static_cast<int>(Phase::scatter)];
  if (data > 0.10 && data >= comm) return "data";
  if (comm > 0.10) return "communication";
  if (gpu_util_percent >= 0 && gpu_util_percent < kHostBoundGpuPercent) return "host";
  return "compute";
}

double busy_share(const PhaseTimes& shares) {
  return shares[static_cast<int>(Phase::forward)] + shares[static_cast<int>(Phase::backward)] +
         shares[static_cast<int>(Phase::optimizer)];
}

std::string format_phase_table(const PhaseTimes& totals, int64_t steps) {
  const PhaseTimes shares = phase_shares(totals);
  std::string out = str_cat("phase        total s   mean ms   share\n");
  char line[96];
  for (int p = 0; p < kPhases; ++p) {
    if (!phase_shown(Phase(p), totals)) continue;
    std::snprintf(line, sizeof(line), "%-10s %9.3f %9.2f %6.1f%%\n", phase_name(Phase(p)),
                  totals[p], steps > 0 ? 1e3 * totals[p] / steps : 0.0, 100 * shares[p]);
    out += line;
  }
  const double sum = std::accumulate(totals.begin(), totals.end(), 0.0);
  std::snprintf(line, sizeof(line), "%-10s %9.3f %9.2f %6.1f%%", "step", sum,
                steps > 0 ? 1e3 * sum / steps : 0.0, sum > 0 ? 100.0 : 0.0);
  return out + line;
}

nlohmann::json phases_json(const PhaseTimes& values) {
  nlohmann::json j = nlohmann::json::object();
  for (int p = 0; p < kPhases; ++p)
    if (phase_shown(Phase(p), values)) j[phase_name(Phase(p))] = values[p];
  return j;
}

double peak_tflops(const std::string& device_name) {
  const std::map<std::string, double> peaks = {
      {"H200", 989.0}, {"H100", 989.0}, {"A100", 312.0}, {"L40S", 362.0}, {"A10", 125.0}};
  for (const auto& [name, tflops] : peaks)
    if (device_name.find(name) != std::string::npos) return tflops;
  return 0;
}

}  // namespace ringtrain
