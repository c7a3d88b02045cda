#pragma once
// ringtrain's ResNet as torchvision's: the names and order of torchvision.models.ResNet's
// state_dict for the same model.
#include <string>
#include <vector>

#include "ringtrain/nn/parameters.hpp"

namespace ringtrain {

// torchvision's name of a ringtrain parameter or buffer: stem.conv.weight -> conv1.weight,
// stem.bn.* -> bn1.*, layerS.B.K.conv.weight -> layerS.B.convK.weight, layerS.B.K.bn.* ->
// layerS.B.bnK.*, layerS.B.shortcut.conv.weight -> layerS.B.downsample.0.weight,
// layerS.B.shortcut.bn.* -> layerS.B.downsample.1.*, fc.* unchanged. Throws for a name that is
// none of these.
std::string torchvision_name(const std::string& ringtrain_name);
// The inverse: ringtrain's name of a torchvision parameter or buffer ("" for
// num_batches_tracked, which ringtrain does not keep).
std::string ringtrain_name(const std::string& torchvision_name);

// One entry of torchvision's state_dict and where ringtrain keeps it.
struct TorchvisionTensor {
  std::string name;  // torchvision's
  Shape shape;
  // The ringtrain parameter or buffer; nullptr for a batch norm's num_batches_tracked (an I64
  // scalar torchvision keeps and ringtrain does not).
  const ParamInfo* source = nullptr;
  bool buffer = false;  // source is one of params.buffer_infos()
};

// torchvision's state_dict of the model whose parameters are `params`, in torchvision's order:
// each module's weight and bias, then a batch norm's running_mean, running_var and
// num_batches_tracked; modules in forward order (conv1, bn1, layer1.0.conv1, ..., downsample,
// fc), which is the order ringtrain registers them in.
std::vector<TorchvisionTensor> torchvision_tensors(const ParameterSet& params);

}  // namespace ringtrain
