#pragma once
// Stable integer hashes for deriving seeds: the same inputs give the same
// seed on every machine and build (std::hash promises neither).
#include <cstdint>
#include <string_view>

namespace kgym::util {

// SplitMix64's finalizer: spreads every input bit over the whole output.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 64-bit FNV-1a of a string.
constexpr std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace kgym::util
