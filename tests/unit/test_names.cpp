// Every enum of a setting: its names parse to distinct values and print back as themselves, and
// a name that is not one of them is refused naming the flag and the accepted names.
#include <gtest/gtest.h>

#include <set>

#include "ringtrain/parallel/backends.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {
namespace {

template <class E>
class SettingNames : public ::testing::Test {};
using Settings = ::testing::Types<Mode, Precision, AugmentOn, DeviceKind, DeviceChoice, Stem,
                                  Schedule, ProfileMode, GradComm, OptimizerKind>;
TYPED_TEST_SUITE(SettingNames, Settings);

TYPED_TEST(SettingNames, RoundTripAndRefuseOthers) {
  std::set<int> values;
  for (const auto& [name, value] : names_of<TypeParam>()) {
    EXPECT_EQ(parse<TypeParam>("--flag", name), value) << name;
    EXPECT_EQ(to_string(value), name);
    EXPECT_TRUE(values.insert(static_cast<int>(value)).second) << name << " names a value twice";
  }
  EXPECT_GE(values.size(), 2u);
  try {
    parse<TypeParam>("--flag", "bogus");
    ADD_FAILURE() << "'bogus' parsed";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--flag"), std::string::npos) << what;
    EXPECT_NE(what.find(names_of<TypeParam>().front().first), std::string::npos) << what;
    EXPECT_NE(what.find("'bogus'"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ringtrain
