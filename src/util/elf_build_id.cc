#include "util/elf_build_id.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

namespace kgym::util {
namespace {

constexpr std::uint32_t kNoteGnuBuildId = 3;
constexpr std::uint32_t kProgramNote = 4;  // PT_NOTE

struct Reader {
  std::string_view image;
  bool big_endian = false;

  std::optional<std::uint64_t> read(std::uint64_t offset, int bytes) const {
    if (offset > image.size() || image.size() - offset < static_cast<std::uint64_t>(bytes)) return std::nullopt;
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) {
      auto byte = static_cast<unsigned char>(image[offset + (big_endian ? i : bytes - 1 - i)]);
      value = (value << 8) | byte;
    }
    return value;
  }
};

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// The build id among the notes in [offset, offset + size), if any.
std::optional<std::string> scan_notes(const Reader& r, std::uint64_t offset, std::uint64_t size) {
  if (offset > r.image.size()) return std::nullopt;
  std::uint64_t end = offset + std::min<std::uint64_t>(size, r.image.size() - offset);
  auto align4 = [](std::uint64_t n) { return (n + 3) & ~std::uint64_t{3}; };
  while (offset + 12 <= end) {
    auto namesz = r.read(offset, 4), descsz = r.read(offset + 4, 4), type = r.read(offset + 8, 4);
    if (!namesz || !descsz || !type) return std::nullopt;
    std::uint64_t name_at = offset + 12;
    std::uint64_t desc_at = name_at + align4(*namesz);
    if (desc_at > end || *descsz > end - desc_at) return std::nullopt;
    if (*type == kNoteGnuBuildId && *namesz == 4 && r.image.substr(name_at, 4) == std::string_view("GNU\0", 4) &&
        *descsz > 0)
      return hex(r.image.substr(desc_at, *descsz));
    offset = desc_at + align4(*descsz);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> elf_build_id(std::string_view image) {
  if (image.size() < 52 || image.substr(0, 4) != "\x7f" "ELF") return std::nullopt;
  bool wide = image[4] == 2;
  if (image[4] != 1 && image[4] != 2) return std::nullopt;
  if (image[5] != 1 && image[5] != 2) return std::nullopt;
  Reader r{image, image[5] == 2};
  auto phoff = wide ? r.read(0x20, 8) : r.read(0x1c, 4);
  auto phentsize = wide ? r.read(0x36, 2) : r.read(0x2a, 2);
  auto phnum = wide ? r.read(0x38, 2) : r.read(0x2c, 2);
  if (!phoff || !phentsize || !phnum) return std::nullopt;
  for (std::uint64_t i = 0; i < *phnum; ++i) {
    std::uint64_t entry = *phoff + i * *phentsize;
    auto type = r.read(entry, 4);
    if (!type || *type != kProgramNote) continue;
    auto offset = wide ? r.read(entry + 8, 8) : r.read(entry + 4, 4);
    auto size = wide ? r.read(entry + 32, 8) : r.read(entry + 16, 4);
    if (!offset || !size) continue;
    if (auto id = scan_notes(r, *offset, *size)) return id;
  }
  return std::nullopt;
}

std::optional<std::string> elf_build_id_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> bytes(64 << 10);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::size_t got = static_cast<std::size_t>(in.gcount());
  // The notes of any object a linker writes lie in its first pages, right
  // after the program headers; read more only when the headers say so.
  std::string_view head(bytes.data(), got);
  if (auto id = elf_build_id(head)) return id;
  if (got < bytes.size()) return std::nullopt;
  in.clear();
  in.seekg(0);
  bytes.assign(64 << 20, 0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return elf_build_id(std::string_view(bytes.data(), static_cast<std::size_t>(in.gcount())));
}

}  // namespace kgym::util
