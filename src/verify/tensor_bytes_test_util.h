#pragma once
// Tensor bytes written by hand, shared by the verify tests.
#include <cstring>
#include <string>
#include <vector>

namespace kgym::verify::testing {

// The bytes of a float32 tensor holding `values`.
inline std::string float_bytes(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace kgym::verify::testing
