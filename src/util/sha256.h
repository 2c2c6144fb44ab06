#pragma once
// SHA-256 (FIPS 180-4) of a byte string, for provenance records (the hash
// of the prompt an agent saw). Not used for anything secret.
#include <string>
#include <string_view>

namespace kgym::util {

// Lower-case hex digest, 64 characters.
std::string sha256_hex(std::string_view data);

}  // namespace kgym::util
