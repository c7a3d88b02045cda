// The comparison helpers the op, gradient and GPU tests rest on: a value that is not finite, on
// either side, fails the comparison naming the element, instead of being dropped by std::max;
// a negative zero is zero.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <limits>

#include "test_util.hpp"

namespace ringtrain {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f32(std::initializer_list<double> values) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(values.size())}, DType::f32);
  int64_t i = 0;
  for (double v : values) t.data<float>()[i++] = static_cast<float>(v);
  return t;
}

Tensor f64(std::initializer_list<double> values) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(values.size())}, DType::f64);
  int64_t i = 0;
  for (double v : values) t.data<double>()[i++] = v;
  return t;
}

TEST(CompareHelpers, ANonFiniteValueFailsNamingTheElement) {
  double result = 0;
  for (double bad : {kNaN, kInf, -kInf}) {
    EXPECT_NONFATAL_FAILURE(result = test::max_rel_diff(f32({1, bad, 2}), f64({1, 1, 2})),
                            "element 1 is not finite");
    EXPECT_EQ(result, kInf);
    EXPECT_NONFATAL_FAILURE(result = test::max_rel_diff(f32({1, 1, 2}), f64({1, 1, bad})),
                            "element 2 is not finite");
    EXPECT_EQ(result, kInf);
    EXPECT_NONFATAL_FAILURE(result = test::relative_l2(f32({bad, 1}), f64({1, 1})),
                            "element 0 is not finite");
    EXPECT_EQ(result, kInf);
  }
}

TEST(CompareHelpers, AnAllNaNResultDoesNotScoreZero) {
  double result = 0;
  EXPECT_NONFATAL_FAILURE(result = test::max_rel_diff(f32({kNaN, kNaN}), f64({kNaN, kNaN})),
                          "element 0 is not finite");
  EXPECT_FALSE(result < 1e-3);
}

TEST(CompareHelpers, AGradientThatIsNaNFailsTheFiniteDifferenceCheck) {
  Tensor x = f64({0.5, -1.5});
  const Tensor analytic = f64({1.0, kNaN});  // d/dx of sum(x) is 1 everywhere
  double result = 0;
  const auto loss = [&] { return x.data<double>()[0] + x.data<double>()[1]; };
  EXPECT_NONFATAL_FAILURE(result = test::max_grad_error<double>(x, analytic, loss, 1e-4),
                          "element 1 is not finite");
  EXPECT_EQ(result, kInf);
}

TEST(CompareHelpers, NegativeZeroIsZeroAndCloseValuesPass) {
  EXPECT_EQ(test::max_rel_diff(f32({-0.0, 1}), f64({0.0, 1})), 0.0);
  EXPECT_EQ(test::relative_l2(f32({-0.0, 2}), f64({0.0, 2})), 0.0);
  EXPECT_NEAR(test::max_rel_diff(f32({1, 2.5}), f64({1, 2.0})), 0.25, 1e-12);
  Tensor x = f64({0.5, -1.5});
  const auto loss = [&] { return x.data<double>()[0] + x.data<double>()[1]; };
  EXPECT_LT(test::max_grad_error<double>(x, f64({1.0, 1.0}), loss, 1e-4), 1e-9);
  EXPECT_GT(test::max_grad_error<double>(x, f64({1.0, 1.5}), loss, 1e-4), 0.49);
}

}  // namespace
}  // namespace ringtrain
