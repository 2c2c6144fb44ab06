#include "verify/shape_plan.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "util/seed_mix.h"

namespace kgym::verify {

std::vector<ShapeSet> extra_shapes(const nlohmann::json& constants, const nlohmann::json& declared,
                                   const std::map<std::string, long long>& base, std::uint64_t seed,
                                   const nlohmann::json& size_keys) {
  auto is_size = [&](const std::string& name) {
    if (!size_keys.is_array()) return true;
    return std::any_of(size_keys.begin(), size_keys.end(), [&](const nlohmann::json& key) {
      return key.is_string() && key.get<std::string>() == name;
    });
  };
  std::vector<ShapeSet> shapes;
  if (declared.is_array()) {
    for (const auto& item : declared) {
      if (shapes.size() == kMaxDeclaredShapes) break;
      if (!item.is_object()) continue;
      ShapeSet shape{"declared", base};
      for (const auto& [name, value] : item.items()) {
        if (value.is_number_integer()) shape.overrides[name] = value.get<long long>();
      }
      if (shape.overrides != base) shapes.push_back(std::move(shape));
    }
  }
  ShapeSet held_out{"held_out", base};
  std::uint64_t state = seed;
  if (constants.is_object()) {
    for (const auto& [name, value] : constants.items()) {
      if (!value.is_number_integer() || !is_size(name)) continue;
      long long v = value.get<long long>();
      if (v < kMinSizeConstant) continue;
      state = util::splitmix64(state);
      double factor = 0.5 + 0.35 * static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
      long long shrunk = std::max<long long>(2, static_cast<long long>(static_cast<double>(v) * factor));
      if (shrunk == v) shrunk = v - 1;
      held_out.overrides[name] = shrunk;
    }
  }
  if (held_out.overrides != base) shapes.push_back(std::move(held_out));
  return shapes;
}

std::string overrides_string(const std::map<std::string, long long>& overrides) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : overrides) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace kgym::verify
