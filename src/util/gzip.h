#pragma once
// gzip (RFC 1952) compression in memory, through zlib. Knows nothing of
// kgym. Decompression is for data nobody vouches for: it stops at a limit
// on the output instead of trusting the sizes the stream claims.
#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

namespace kgym::util {

// One gzip member holding `data` (zlib's default level).
std::expected<std::string, std::string> gzip_compress(std::string_view data);

// The bytes of the single gzip member `data` holds. Errors: not gzip data,
// corrupt or truncated data, bytes after the member, or more than
// `max_bytes` of output ("expands beyond N bytes").
std::expected<std::string, std::string> gzip_decompress(std::string_view data, std::size_t max_bytes);

}  // namespace kgym::util
