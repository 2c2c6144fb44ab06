#pragma once
// What this kgym binary is: its version (CMake's project version) and the
// git commit of the tree it was built from, "<hash>-dirty" when tracked
// files differed from that commit, "unknown" outside a checkout. Defined in
// a file cmake/build_info.cmake generates at every build.
#include <string_view>

namespace kgym {

std::string_view kgym_version();  // "0.1.0"
std::string_view kgym_commit();   // "4542f83a1b2c", "4542f83a1b2c-dirty" or "unknown"

}  // namespace kgym
