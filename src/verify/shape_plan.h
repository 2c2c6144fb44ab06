#pragma once
// Extra shapes for multi-shape correctness (ARCHITECTURE.md "Trust model" 4):
// the shapes a problem declares in a module-level CASES list, and one
// held-out shape derived from the run seed by shrinking the problem's size
// constants, so no candidate can know it in advance. Pure functions.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kgym::verify {

struct ShapeSet {
  std::string origin;                          // "declared" | "held_out"
  std::map<std::string, long long> overrides;  // applied on top of the request's overrides
};

// Size constants are top-level ints at least this large; smaller ones
// (dims, kernel sizes, flags) are left alone.
inline constexpr long long kMinSizeConstant = 8;
// At most this many declared shapes are verified.
inline constexpr std::size_t kMaxDeclaredShapes = 3;

// `constants` is the reference's {NAME: int} after the request's overrides
// (load reply), `declared` its CASES list ([{NAME: int}, ...], may be
// null), `size_keys` the names of its size constants (load reply: the
// literals that feed its inputs, the ones problem.size scales; null: every
// constant of at least kMinSizeConstant). The held-out shape scales each
// size constant by a factor in [0.5, 0.85] drawn from `seed` (never
// leaving it unchanged); none when the problem has no size constant.
std::vector<ShapeSet> extra_shapes(const nlohmann::json& constants, const nlohmann::json& declared,
                                   const std::map<std::string, long long>& base, std::uint64_t seed,
                                   const nlohmann::json& size_keys = nullptr);

// "batch_size=37, dim=3481"
std::string overrides_string(const std::map<std::string, long long>& overrides);

}  // namespace kgym::verify
