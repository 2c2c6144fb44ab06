#pragma once
// SHA-256 of a byte string (OpenSSL's): provenance records, the compile
// caches' keys, a bundle's manifest.
#include <string>
#include <string_view>

namespace kgym::util {

// Lower-case hex digest, 64 characters.
std::string sha256_hex(std::string_view data);

}  // namespace kgym::util
