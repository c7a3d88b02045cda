// bf16 and f16 rounding against exact cases and, for f16, the CPU's own F16C conversion.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>

#include "ringtrain/core/half.hpp"

namespace ringtrain {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3F808001u)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

__attribute__((target("f16c"))) uint16_t hardware_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hardware_f32(uint16_t h) {
  return _cvtsh_ss(h);
}

TEST(Half, F16MatchesTheHardwareConversion) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C to compare with";
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(hardware_f32(static_cast<uint16_t>(h))));
      continue;
    }
    ASSERT_EQ(f, hardware_f32(static_cast<uint16_t>(h))) << h;
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) {
    const float f = bits_to_float(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16(f), hardware_f16(f)) << f;
  }
}

}  // namespace
}  // namespace ringtrain
