#include "verify/tensor_compare.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace kgym::verify {
namespace {

template <typename T>
T load(std::string_view data, std::size_t index) {
  T value;
  std::memcpy(&value, data.data() + index * sizeof(T), sizeof(T));
  return value;
}

std::string value_string(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "float32" || name == "float") return DType::kFloat32;
  if (name == "float64" || name == "double") return DType::kFloat64;
  if (name == "float16" || name == "half") return DType::kFloat16;
  if (name == "bfloat16") return DType::kBFloat16;
  if (name == "int8") return DType::kInt8;
  if (name == "int16" || name == "short") return DType::kInt16;
  if (name == "int32" || name == "int") return DType::kInt32;
  if (name == "int64" || name == "long") return DType::kInt64;
  if (name == "uint8") return DType::kUInt8;
  if (name == "bool") return DType::kBool;
  return std::nullopt;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 1;
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

float float16_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

double element_as_double(DType dtype, std::string_view data, std::size_t index) {
  switch (dtype) {
    case DType::kFloat32: return load<float>(data, index);
    case DType::kFloat64: return load<double>(data, index);
    case DType::kFloat16: return float16_to_float(load<std::uint16_t>(data, index));
    case DType::kBFloat16: return bfloat16_to_float(load<std::uint16_t>(data, index));
    case DType::kInt8: return load<std::int8_t>(data, index);
    case DType::kInt16: return load<std::int16_t>(data, index);
    case DType::kInt32: return load<std::int32_t>(data, index);
    case DType::kInt64: return static_cast<double>(load<std::int64_t>(data, index));
    case DType::kUInt8: return load<std::uint8_t>(data, index);
    case DType::kBool: return load<std::uint8_t>(data, index) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string index_string(const std::vector<std::int64_t>& shape, std::size_t flat_index) {
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    auto extent = static_cast<std::size_t>(std::max<std::int64_t>(shape[d], 1));
    index[d] = static_cast<std::int64_t>(flat_index % extent);
    flat_index /= extent;
  }
  return shape_string(index);
}

TensorComparison compare_tensors(const TensorBytes& a, const TensorBytes& b, Tolerance tolerance) {
  TensorComparison result;
  if (a.dtype != b.dtype) {
    result.problem = fmt::format("dtype {} where the reference has {}", a.dtype, b.dtype);
    return result;
  }
  if (a.shape != b.shape) {
    result.problem =
        fmt::format("shape {} where the reference has {}", shape_string(a.shape), shape_string(b.shape));
    return result;
  }
  auto dtype = parse_dtype(b.dtype);
  if (!dtype) {
    result.problem = fmt::format("dtype {} cannot be compared", b.dtype);
    return result;
  }
  std::size_t numel = 1;
  for (auto extent : b.shape) numel *= static_cast<std::size_t>(std::max<std::int64_t>(extent, 0));
  std::size_t expected_bytes = numel * element_size(*dtype);
  if (a.data.size() != expected_bytes || b.data.size() != expected_bytes) {
    result.problem = fmt::format("{} bytes for {} {} elements (reference {} bytes)", a.data.size(), numel,
                                 b.dtype, b.data.size());
    return result;
  }
  if (*dtype == DType::kInt64) {
    // Exact 64-bit comparison; doubles would round large values.
    for (std::size_t i = 0; i < numel; ++i) {
      auto x = load<std::int64_t>(a.data, i), y = load<std::int64_t>(b.data, i);
      // The difference in unsigned 64-bit arithmetic is exact before the cast.
      std::uint64_t gap = x > y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
                                : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
      double diff = static_cast<double>(gap);
      double abs_y = std::fabs(static_cast<double>(y));
      result.max_abs_err = std::max(result.max_abs_err.value_or(0), diff);
      if (y != 0) result.max_rel_err = std::max(result.max_rel_err.value_or(0), diff / abs_y);
      if (x != y && diff > tolerance.atol + tolerance.rtol * abs_y) {
        if (result.mismatched++ == 0) result.worst_index = i;
      }
    }
  } else {
    double worst_excess = -1;
    std::optional<std::size_t> first_special;  // first NaN/Inf placement error
    for (std::size_t i = 0; i < numel; ++i) {
      double x = element_as_double(*dtype, a.data, i), y = element_as_double(*dtype, b.data, i);
      bool x_finite = std::isfinite(x), y_finite = std::isfinite(y);
      if (!x_finite || !y_finite) {
        bool same = (std::isnan(x) && std::isnan(y)) || (!std::isnan(x) && x == y);
        if (!same) {
          ++result.mismatched;
          if (!first_special) first_special = i;
        }
        continue;
      }
      double diff = std::fabs(x - y);
      result.max_abs_err = std::max(result.max_abs_err.value_or(0), diff);
      if (y != 0) result.max_rel_err = std::max(result.max_rel_err.value_or(0), diff / std::fabs(y));
      double excess = diff - (tolerance.atol + tolerance.rtol * std::fabs(y));
      if (excess > 0) ++result.mismatched;
      if (excess > worst_excess && (excess > 0 || !result.worst_index)) {
        worst_excess = excess;
        if (excess > 0) result.worst_index = i;
      }
    }
    if (first_special) {
      std::size_t i = *first_special;
      result.worst_index = i;
      result.problem = fmt::format(
          "{} at {} where the reference has {}", value_string(element_as_double(*dtype, a.data, i)),
          index_string(b.shape, i), value_string(element_as_double(*dtype, b.data, i)));
      return result;
    }
  }
  if (result.mismatched == 0) {
    result.ok = true;
    return result;
  }
  std::size_t i = *result.worst_index;
  result.problem = fmt::format(
      "{} of {} elements outside atol={:g} rtol={:g}; worst at {}: {} vs reference {}", result.mismatched,
      numel, tolerance.atol, tolerance.rtol, index_string(b.shape, i),
      value_string(element_as_double(*dtype, a.data, i)), value_string(element_as_double(*dtype, b.data, i)));
  return result;
}

}  // namespace kgym::verify
