#include "util/tar.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace kgym::util {
namespace {

constexpr std::size_t kBlock = 512;

// Header fields: offset and width (POSIX.1-1988 ustar).
struct Field {
  std::size_t offset, width;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kUid{108, 8}, kGid{116, 8}, kSize{124, 12}, kMtime{136, 12},
    kChecksum{148, 8}, kTypeflag{156, 1}, kLinkname{157, 100}, kMagic{257, 6}, kVersion{263, 2},
    kPrefix{345, 155};

std::size_t padded(std::uint64_t size) {
  return static_cast<std::size_t>((size + kBlock - 1) / kBlock * kBlock);
}

// `value` as zero-padded octal digits filling the field but its last byte (NUL).
void put_octal(char* header, Field f, std::uint64_t value) {
  std::string digits = fmt::format("{:0{}o}", value, f.width - 1);
  std::memcpy(header + f.offset, digits.data(), f.width - 1);
  header[f.offset + f.width - 1] = '\0';
}

void put_text(char* header, Field f, std::string_view text) {
  std::memcpy(header + f.offset, text.data(), std::min(text.size(), f.width));
}

// A NUL-terminated (or full-width) text field.
std::string get_text(std::string_view header, Field f) {
  std::string_view field = header.substr(f.offset, f.width);
  return std::string(field.substr(0, field.find('\0')));
}

// An octal number field: optional leading spaces, digits, then NUL or
// spaces. nullopt for anything else (base-256 sizes included).
std::optional<std::uint64_t> get_octal(std::string_view header, Field f) {
  std::string_view field = header.substr(f.offset, f.width);
  std::size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  std::uint64_t value = 0;
  std::size_t digits = 0;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) {
    if (value > (UINT64_MAX >> 3)) return std::nullopt;
    value = value * 8 + static_cast<std::uint64_t>(field[i] - '0');
  }
  for (; i < field.size(); ++i) {
    if (field[i] != '\0' && field[i] != ' ') return std::nullopt;
  }
  if (digits == 0) return std::nullopt;
  return value;
}

// Sum of the header's bytes with the checksum field read as spaces.
std::uint64_t header_checksum(std::string_view header) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    bool in_checksum = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.width;
    sum += in_checksum ? ' ' : static_cast<unsigned char>(header[i]);
  }
  return sum;
}

// Splits `path` into ustar's prefix and name fields.
std::optional<std::pair<std::string, std::string>> split_name(const std::string& path) {
  if (path.size() <= kName.width) return std::pair{std::string(), path};
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (slash <= kPrefix.width && path.size() - slash - 1 <= kName.width && slash + 1 < path.size())
      return std::pair{path.substr(0, slash), path.substr(slash + 1)};
  }
  return std::nullopt;
}

std::string_view type_name(char flag) {
  switch (flag) {
    case '1': return "a hard link";
    case '2': return "a symbolic link";
    case '3': return "a character device";
    case '4': return "a block device";
    case '6': return "a FIFO";
    case '7': return "a contiguous file";
    case 'x':
    case 'g': return "a pax extended header";
    case 'L':
    case 'K': return "a GNU long name";
    default: return "an unknown entry type";
  }
}

bool all_zero(std::string_view block) {
  return std::ranges::all_of(block, [](char c) { return c == '\0'; });
}

}  // namespace

std::optional<std::string> unsafe_archive_path(std::string_view path) {
  if (path.empty()) return "empty path";
  if (path.front() == '/') return "absolute path";
  for (char c : path) {
    if (c == '\\') return "backslash in path";
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      return "control or non-ASCII byte in path";
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") return "'..' component";
    if (part == ".") return "'.' component";
    if (part.empty()) return "empty component ('//' or a trailing '/')";
    if (part.size() > 255) return "component longer than 255 bytes";
    start = end + 1;
  }
  return std::nullopt;
}

std::expected<std::string, std::string> write_tar(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const TarEntry& e : entries) {
    if (auto why = unsafe_archive_path(e.path)) return std::unexpected(fmt::format("'{}': {}", e.path, *why));
    bool dir = e.type == TarEntry::Type::kDirectory;
    auto split = split_name(e.path);
    if (!split)
      return std::unexpected(
          fmt::format("'{}': too long for a ustar header (name 100, prefix 155 bytes)", e.path));
    char header[kBlock] = {};
    put_text(header, kName, split->second);
    put_text(header, kPrefix, split->first);
    put_octal(header, kMode, dir ? 0755 : 0644);
    put_octal(header, kUid, 0);
    put_octal(header, kGid, 0);
    put_octal(header, kSize, dir ? 0 : e.data.size());
    put_octal(header, kMtime, 0);
    header[kTypeflag.offset] = dir ? '5' : '0';
    put_text(header, kMagic, std::string_view("ustar\0", 6));
    put_text(header, kVersion, "00");
    std::string sum = fmt::format("{:06o}", header_checksum(std::string_view(header, kBlock)));
    std::memcpy(header + kChecksum.offset, sum.data(), 6);
    header[kChecksum.offset + 6] = '\0';
    header[kChecksum.offset + 7] = ' ';
    out.append(header, kBlock);
    if (!dir) {
      out += e.data;
      out.append(padded(e.data.size()) - e.data.size(), '\0');
    }
  }
  out.append(2 * kBlock, '\0');
  return out;
}

std::expected<std::vector<TarEntry>, std::string> read_tar(std::string_view archive,
                                                           const TarLimits& limits) {
  std::vector<TarEntry> entries;
  std::map<std::string, TarEntry::Type> seen;
  std::uint64_t total = 0;
  std::size_t at = 0;
  for (std::size_t index = 1;; ++index) {
    if (at + kBlock > archive.size()) {
      return std::unexpected(fmt::format(
          "truncated archive: it ends at byte {} without its end-of-archive blocks", archive.size()));
    }
    std::string_view header = archive.substr(at, kBlock);
    if (all_zero(header)) break;  // the end; what follows is padding
    // POSIX writes "ustar\0" "00", GNU tar "ustar " " \0" (its offset 345
    // holds times instead of a prefix).
    std::string magic = get_text(header, kMagic);
    bool gnu = magic == "ustar ";
    if (magic != "ustar" && !gnu) {
      return std::unexpected(
          fmt::format("not a tar archive: entry {} at byte {} has no ustar header", index, at));
    }
    auto checksum = get_octal(header, kChecksum);
    if (!checksum || *checksum != header_checksum(header)) {
      return std::unexpected(
          fmt::format("not a tar archive: entry {} at byte {}: header checksum mismatch", index, at));
    }
    std::string prefix = gnu ? std::string() : get_text(header, kPrefix);
    std::string path = get_text(header, kName);
    if (!prefix.empty()) path = prefix + "/" + path;
    char flag = header[kTypeflag.offset];
    auto entry_error = [&](const std::string& rule) {
      return std::unexpected(fmt::format("entry {} '{}': {}", index, path, rule));
    };
    bool dir = flag == '5';
    if (dir && path.size() > 1 && path.back() == '/') path.pop_back();
    if (flag != '0' && flag != '\0' && !dir) {
      std::string link = get_text(header, kLinkname);
      return entry_error(fmt::format("is {}{}; only regular files and directories are allowed",
                                     type_name(flag), link.empty() ? "" : " to '" + link + "'"));
    }
    if (auto why = unsafe_archive_path(path)) return entry_error(*why);
    if (entries.size() >= limits.max_entries)
      return entry_error(fmt::format("more than {} entries", limits.max_entries));
    auto size = get_octal(header, kSize);
    if (!size) return entry_error("size field is not an octal number");
    if (dir && *size != 0) return entry_error("a directory with data");
    if (*size > limits.max_file_bytes)
      return entry_error(
          fmt::format("{} bytes, more than the {} allowed per file", *size, limits.max_file_bytes));
    total += *size;
    if (total > limits.max_total_bytes)
      return entry_error(fmt::format("the files exceed {} bytes together", limits.max_total_bytes));
    if (seen.contains(path)) return entry_error("appears twice in the archive");
    // No entry below a file: extracting it would need the file as a directory.
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      auto parent = seen.find(path.substr(0, slash));
      if (parent != seen.end() && parent->second == TarEntry::Type::kFile)
        return entry_error(fmt::format("lies below the file '{}'", parent->first));
    }
    // Nor a file above an entry seen before it.
    if (auto below = seen.lower_bound(path + "/");
        !dir && below != seen.end() && below->first.starts_with(path + "/"))
      return entry_error(fmt::format("is a file above the entry '{}'", below->first));
    at += kBlock;
    if (archive.size() - at < *size) {
      return std::unexpected(
          fmt::format("truncated archive: entry {} '{}' has {} bytes, the archive ends after {}", index, path,
                      *size, archive.size() - at));
    }
    TarEntry entry{path, dir ? TarEntry::Type::kDirectory : TarEntry::Type::kFile,
                   std::string(archive.substr(at, static_cast<std::size_t>(*size)))};
    at += std::min(padded(*size), archive.size() - at);
    seen.emplace(path, entry.type);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace kgym::util
