#pragma once
// The keys of pypto-gym's benchmark config (its configs/local.yaml), which
// kgym refuses like any unknown key, each with what takes its place in
// kgym, or why nothing does (docs/migrating.md has the whole map).
#include <optional>
#include <string>
#include <string_view>

namespace kgym::config_detail {

// For a dotted key path kgym does not know ("pypto.opencode_model"): the
// sentence that names its kgym equivalent, when it is one of pypto-gym's.
std::optional<std::string> predecessor_key(std::string_view path);

}  // namespace kgym::config_detail
