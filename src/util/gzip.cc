#include "util/gzip.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

namespace kgym::util {
namespace {

constexpr int kGzipWindow = 15 + 16;  // zlib: a gzip wrapper, not a zlib one
constexpr std::size_t kChunk = 1 << 16;

// zlib's streams count in uInt; feed and drain at most this much per call.
uInt chunk_of(std::size_t n) { return static_cast<uInt>(std::min(n, kChunk)); }

}  // namespace

std::expected<std::string, std::string> gzip_compress(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return std::unexpected("zlib: cannot start compressing");
  std::string out;
  std::size_t fed = 0;
  char buffer[kChunk];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < data.size()) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      z.avail_in = chunk_of(data.size() - fed);
      fed += z.avail_in;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = deflate(&z, fed == data.size() ? Z_FINISH : Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
      deflateEnd(&z);
      return std::unexpected(fmt::format("zlib: compressing failed ({})", status));
    }
    out.append(buffer, sizeof buffer - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

std::expected<std::string, std::string> gzip_decompress(std::string_view data, std::size_t max_bytes) {
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b)
    return std::unexpected("not gzip data (no gzip magic number at its start)");
  z_stream z{};
  if (inflateInit2(&z, kGzipWindow) != Z_OK) return std::unexpected("zlib: cannot start decompressing");
  std::string out;
  std::size_t fed = 0;
  char buffer[kChunk];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (z.avail_in == 0) {
      if (fed == data.size()) {
        inflateEnd(&z);
        return std::unexpected(
            fmt::format("truncated gzip data: it ends after {} bytes, inside the stream", data.size()));
      }
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + fed));
      z.avail_in = chunk_of(data.size() - fed);
      fed += z.avail_in;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
      std::string why = z.msg ? z.msg : fmt::format("zlib error {}", status);
      inflateEnd(&z);
      return std::unexpected(fmt::format("corrupt gzip data: {}", why));
    }
    std::size_t produced = sizeof buffer - z.avail_out;
    if (out.size() + produced > max_bytes) {
      inflateEnd(&z);
      return std::unexpected(fmt::format("gzip data expands beyond {} bytes", max_bytes));
    }
    out.append(buffer, produced);
  }
  std::size_t trailing = z.avail_in + (data.size() - fed);
  inflateEnd(&z);
  if (trailing != 0)
    return std::unexpected(fmt::format("{} bytes of other data after the gzip stream", trailing));
  return out;
}

}  // namespace kgym::util
