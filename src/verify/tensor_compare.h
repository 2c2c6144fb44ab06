#pragma once
// Decoding and comparison of raw tensor bytes as the workers send them
// (little-endian, C-contiguous). Pure functions: the verdict logic feeds
// them the reference's and the candidate's outputs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"

namespace kgym::verify {

enum class DType { kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kInt16, kInt32, kInt64, kUInt8, kBool };

// torch dtype names without "torch." ("float32", "bfloat16", "bool").
std::optional<DType> parse_dtype(std::string_view name);
std::string_view to_string(DType dtype);
std::size_t element_size(DType dtype);
bool is_floating(DType dtype);

// Half-precision bit patterns to float (exact).
float float16_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

// A non-owning view of one tensor's bytes.
struct TensorBytes {
  std::string dtype;  // torch dtype name as received
  std::vector<std::int64_t> shape;
  std::string_view data;  // numel * element_size bytes
};

// Element `index` (flat, row-major) as a double; integers and bool exactly
// when they fit in 53 bits.
double element_as_double(DType dtype, std::string_view data, std::size_t index);

// "[2, 3]"
std::string shape_string(const std::vector<std::int64_t>& shape);
// Flat index -> "[i, j, k]" for the shape.
std::string index_string(const std::vector<std::int64_t>& shape, std::size_t flat_index);

struct TensorComparison {
  bool ok = false;
  std::string problem;  // why not ok, one line; "" when ok
  // Over elements where both values are finite; nullopt when none compared
  // (shape/dtype mismatch, empty tensor).
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;       // |a-b| / |b| over elements with b != 0
  std::optional<std::size_t> worst_index;  // flat index of the largest tolerance excess
  std::size_t mismatched = 0;              // elements outside tolerance (incl. NaN/Inf placement)
};

// Compares candidate `a` against reference `b`: dtype and shape must match
// exactly; NaN must sit where the reference has NaN, +-Inf where it has the
// same Inf; other elements pass when |a-b| <= atol + rtol*|b|. Integer and
// bool tensors use the given tolerance too (default_tolerance gives exact).
TensorComparison compare_tensors(const TensorBytes& a, const TensorBytes& b, Tolerance tolerance);

}  // namespace kgym::verify
