#pragma once
// std::optional <-> JSON null, for records whose absent measurements must
// serialize as null (never 0).
#include <optional>

#include <nlohmann/json.hpp>

namespace kgym::util {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value at `key`, or nullopt when the key is missing or null. Throws
// nlohmann::json::exception when present with the wrong type.
template <typename T>
std::optional<T> optional_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

}  // namespace kgym::util
