#include "ringtrain/exchange/torchvision_names.hpp"

#include <map>

namespace ringtrain {
namespace {

// One unit's name in ringtrain and in torchvision; `prefix` rules match the start of a name,
// the others anywhere in it (every name holds exactly one unit).
struct Rule {
  const char* ringtrain;
  const char* torchvision;
  bool prefix;
};

const Rule kRules[] = {
    {"stem.conv.", "conv1.", true},
    {"stem.bn.", "bn1.", true},
    {"fc.", "fc.", true},
    {".shortcut.conv.", ".downsample.0.", false},
    {".shortcut.bn.", ".downsample.1.", false},
    {".1.conv.", ".conv1.", false},
    {".1.bn.", ".bn1.", false},
    {".2.conv.", ".conv2.", false},
    {".2.bn.", ".bn2.", false},
    {".3.conv.", ".conv3.", false},
    {".3.bn.", ".bn3.", false},
};

// `name` with the first rule that matches it applied (from -> to); "" when none does.
std::string rename(const std::string& name, const char* Rule::*from, const char* Rule::*to) {
  for (const Rule& r : kRules) {
    const std::string f = r.*from;
    const size_t at = r.prefix ? (name.rfind(f, 0) == 0 ? 0 : std::string::npos) : name.find(f);
    if (at == std::string::npos) continue;
    if (!r.prefix && name.rfind("layer", 0) != 0) continue;
    return name.substr(0, at) + (r.*to) + name.substr(at + f.size());
  }
  return "";
}

const char kBatchesTracked[] = "num_batches_tracked";

}  // namespace

std::string torchvision_name(const std::string& ringtrain_name) {
  const std::string name = rename(ringtrain_name, &Rule::ringtrain, &Rule::torchvision);
  RT_CHECK(!name.empty(), "torchvision_name: ", ringtrain_name,
           " is not a parameter or buffer of ringtrain's ResNet");
  return name;
}

std::string ringtrain_name(const std::string& torchvision_name) {
  const size_t dot = torchvision_name.rfind('.');
  if (dot != std::string::npos && torchvision_name.substr(dot + 1) == kBatchesTracked) return "";
  return rename(torchvision_name, &Rule::torchvision, &Rule::ringtrain);
}

std::vector<TorchvisionTensor> torchvision_tensors(const ParameterSet& params) {
  std::map<std::string, const ParamInfo*> buffers;
  for (const ParamInfo& b : params.buffer_infos()) buffers[b.name] = &b;
  std::vector<TorchvisionTensor> all;
  for (const ParamInfo& p : params.param_infos()) {
    all.push_back({torchvision_name(p.name), p.shape, &p, false});
    if (p.kind != ParamKind::norm_bias) continue;
    const std::string module = p.name.substr(0, p.name.size() - std::string("bias").size());
    for (const char* stat : {"running_mean", "running_var"}) {
      const ParamInfo* b = buffers.at(module + stat);
      all.push_back({torchvision_name(b->name), b->shape, b, true});
    }
    const std::string tv = torchvision_name(module + "bias");
    all.push_back({tv.substr(0, tv.size() - 4) + kBatchesTracked, {}, nullptr, true});
  }
  return all;
}

}  // namespace ringtrain
