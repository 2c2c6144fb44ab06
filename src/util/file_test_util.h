#pragma once
// Files written by hand, shared by the util tests.
#include <filesystem>
#include <fstream>
#include <string>

namespace kgym::util::testing {

// Writes `text` to `file` (created or truncated).
inline void put_file(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace kgym::util::testing
