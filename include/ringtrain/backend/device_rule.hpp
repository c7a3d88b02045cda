#pragma once
#include <cstdint>
#include <iterator>
#include <utility>
#include <variant>

#include "ringtrain/backend/device.hpp"
#include "ringtrain/backend/kernels/update_rules.hpp"

namespace ringtrain {

// An update rule as Ops::optimizer_step reads it: its hyper-parameter struct in device memory,
// written there before each update (write_rule). `kind` is the UpdateRule
// alternative the bytes hold.
// Note: the update reads its learning rate and scales from the device, not from a kernel
// argument, so that a step replayed from a CUDA graph (Device::replay) uses the values written
// for it rather than those it was captured with.
struct DeviceRule {
  size_t kind = 0;
  Tensor hyper;  // u8, at least the rule struct's size
};

// Calls f with a value-initialised struct of the rule type `kind` names: for the type alone.
template <class F>
decltype(auto) visit_rule_type(size_t kind, F&& f) {
  static const UpdateRule kinds[] = {SgdHyper{}, LarsHyper{}, AdamWHyper{}};
  static_assert(std::size(kinds) == std::variant_size_v<UpdateRule>);
  return std::visit(std::forward<F>(f), kinds[kind]);
}

// The size of a DeviceRule's hyper tensor that holds any rule.
constexpr int64_t hyper_bytes() {
  return static_cast<int64_t>(sizeof(UpdateRule));
}

// `rule` written into `hyper` (u8, hyper_bytes() long) by Device::write, as optimizer_step
// reads it.
DeviceRule write_rule(Device& device, const UpdateRule& rule, Tensor& hyper);

}  // namespace ringtrain
