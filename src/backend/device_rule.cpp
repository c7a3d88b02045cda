#include "ringtrain/backend/device_rule.hpp"

#include "ringtrain/core/error.hpp"

namespace ringtrain {

DeviceRule write_rule(Device& device, const UpdateRule& rule, Tensor& hyper) {
  RT_CHECK(hyper.dtype() == DType::u8 && hyper.numel() >= hyper_bytes(),
           "write_rule: the hyper-parameters need a u8 tensor of ", hyper_bytes(), " bytes, got ",
           hyper.describe());
  std::visit([&](const auto& h) { device.write(&h, sizeof(h), hyper); }, rule);
  return {rule.index(), hyper};
}

}  // namespace ringtrain
