#include "verify/tensor_compare.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace kgym::verify {
namespace {

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TensorBytes view(const std::string& dtype, std::vector<std::int64_t> shape, const std::string& data) {
  return TensorBytes{dtype, std::move(shape), data};
}

TEST(TensorCompare, ParsesEveryDtype) {
  for (auto name :
       {"float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"}) {
    auto dtype = parse_dtype(name);
    ASSERT_TRUE(dtype) << name;
    EXPECT_EQ(to_string(*dtype), name);
  }
  EXPECT_FALSE(parse_dtype("complex64"));
  EXPECT_EQ(element_size(DType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DType::kInt64), 8u);
}

TEST(TensorCompare, DecodesHalfPrecision) {
  EXPECT_EQ(float16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(float16_to_float(0xc000), -2.0f);
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(float16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(float16_to_float(0x7e00)));
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xc040), -3.0f);
}

TEST(TensorCompare, DecodesIntegersAndBool) {
  auto i8 = bytes_of<std::int8_t>({-5, 7});
  EXPECT_EQ(element_as_double(DType::kInt8, i8, 0), -5);
  auto u8 = bytes_of<std::uint8_t>({250});
  EXPECT_EQ(element_as_double(DType::kUInt8, u8, 0), 250);
  auto i16 = bytes_of<std::int16_t>({-300});
  EXPECT_EQ(element_as_double(DType::kInt16, i16, 0), -300);
  auto i32 = bytes_of<std::int32_t>({1 << 30});
  EXPECT_EQ(element_as_double(DType::kInt32, i32, 0), 1 << 30);
  auto b = bytes_of<std::uint8_t>({0, 1});
  EXPECT_EQ(element_as_double(DType::kBool, b, 1), 1);
}

TEST(TensorCompare, EqualFloatTensorsPass) {
  auto data = bytes_of<float>({1, 2, 3, 4});
  auto r = compare_tensors(view("float32", {2, 2}, data), view("float32", {2, 2}, data), {1e-5, 1e-5});
  EXPECT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(*r.max_abs_err, 0);
}

TEST(TensorCompare, ReportsWorstElementOutsideTolerance) {
  auto a = bytes_of<float>({1, 2, 3.5f, 4});
  auto b = bytes_of<float>({1, 2, 3, 4.0001f});
  auto r = compare_tensors(view("float32", {2, 2}, a), view("float32", {2, 2}, b), {1e-3, 0});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatched, 1u);
  EXPECT_EQ(*r.worst_index, 2u);
  EXPECT_NEAR(*r.max_abs_err, 0.5, 1e-6);
  EXPECT_NEAR(*r.max_rel_err, 0.5 / 3, 1e-6);
  EXPECT_NE(r.problem.find("[1, 0]"), std::string::npos) << r.problem;
}

TEST(TensorCompare, RelativeToleranceScalesWithReference) {
  auto a = bytes_of<double>({1001, 1.01});
  auto b = bytes_of<double>({1000, 1.0});
  EXPECT_TRUE(compare_tensors(view("float64", {2}, a), view("float64", {2}, b), {0, 0.011}).ok);
  EXPECT_FALSE(compare_tensors(view("float64", {2}, a), view("float64", {2}, b), {0, 0.005}).ok);
}

TEST(TensorCompare, NanAndInfMustSitWhereTheReferenceHasThem) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto ref = bytes_of<float>({nan, inf, -inf, 1});
  EXPECT_TRUE(compare_tensors(view("float32", {4}, ref), view("float32", {4}, ref), {0, 0}).ok);
  auto nan_moved = bytes_of<float>({1, inf, -inf, nan});
  auto r = compare_tensors(view("float32", {4}, nan_moved), view("float32", {4}, ref), {1, 1});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(*r.worst_index, 0u);
  EXPECT_NE(r.problem.find("nan"), std::string::npos) << r.problem;
  auto inf_flipped = bytes_of<float>({nan, -inf, -inf, 1});
  EXPECT_FALSE(compare_tensors(view("float32", {4}, inf_flipped), view("float32", {4}, ref), {1, 1}).ok);
}

TEST(TensorCompare, ShapeAndDtypeMustMatchExactly) {
  auto data = bytes_of<float>({1, 2, 3, 4});
  auto shape = compare_tensors(view("float32", {4}, data), view("float32", {2, 2}, data), {1, 1});
  EXPECT_FALSE(shape.ok);
  EXPECT_NE(shape.problem.find("shape [4]"), std::string::npos) << shape.problem;
  auto as_int = bytes_of<std::int32_t>({1, 2, 3, 4});
  auto dtype = compare_tensors(view("int32", {4}, as_int), view("float32", {4}, data), {1, 1});
  EXPECT_FALSE(dtype.ok);
  EXPECT_NE(dtype.problem.find("dtype int32"), std::string::npos) << dtype.problem;
}

TEST(TensorCompare, WrongByteCountIsAMismatch) {
  auto data = bytes_of<float>({1, 2, 3});
  auto r = compare_tensors(view("float32", {4}, data), view("float32", {4}, data), {1, 1});
  EXPECT_FALSE(r.ok);
}

TEST(TensorCompare, HalfPrecisionTensors) {
  auto a = bytes_of<std::uint16_t>({0x3c00, 0x4000});  // 1, 2
  auto b = bytes_of<std::uint16_t>({0x3c00, 0x4001});  // 1, 2.00195
  EXPECT_TRUE(compare_tensors(view("float16", {2}, a), view("float16", {2}, b), {1e-2, 0}).ok);
  EXPECT_FALSE(compare_tensors(view("float16", {2}, a), view("float16", {2}, b), {1e-4, 0}).ok);
  auto c = bytes_of<std::uint16_t>({0x3f80});
  auto d = bytes_of<std::uint16_t>({0x4000});
  EXPECT_FALSE(compare_tensors(view("bfloat16", {1}, c), view("bfloat16", {1}, d), {0.5, 0}).ok);
}

TEST(TensorCompare, IntegersCompareExactly) {
  auto a = bytes_of<std::int64_t>({(1LL << 60) + 1, 5});
  auto b = bytes_of<std::int64_t>({(1LL << 60), 5});
  auto r = compare_tensors(view("int64", {2}, a), view("int64", {2}, b), {0, 0});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(*r.worst_index, 0u);
  EXPECT_TRUE(compare_tensors(view("int64", {2}, b), view("int64", {2}, b), {0, 0}).ok);
  auto x = bytes_of<std::uint8_t>({1, 0});
  auto y = bytes_of<std::uint8_t>({1, 1});
  EXPECT_FALSE(compare_tensors(view("bool", {2}, x), view("bool", {2}, y), {0, 0}).ok);
  for (auto dtype : {"int8", "uint8"}) {
    EXPECT_FALSE(compare_tensors(view(dtype, {2}, x), view(dtype, {2}, y), {0, 0}).ok) << dtype;
  }
  auto i16a = bytes_of<std::int16_t>({3}), i16b = bytes_of<std::int16_t>({4});
  EXPECT_FALSE(compare_tensors(view("int16", {1}, i16a), view("int16", {1}, i16b), {0, 0}).ok);
  auto i32a = bytes_of<std::int32_t>({3}), i32b = bytes_of<std::int32_t>({3});
  EXPECT_TRUE(compare_tensors(view("int32", {1}, i32a), view("int32", {1}, i32b), {0, 0}).ok);
}

TEST(TensorCompare, EmptyAndScalarTensors) {
  EXPECT_TRUE(compare_tensors(view("float32", {0, 3}, ""), view("float32", {0, 3}, ""), {0, 0}).ok);
  auto s = bytes_of<float>({2});
  EXPECT_TRUE(compare_tensors(view("float32", {}, s), view("float32", {}, s), {0, 0}).ok);
  EXPECT_EQ(index_string({2, 3}, 5), "[1, 2]");
}

}  // namespace
}  // namespace kgym::verify
