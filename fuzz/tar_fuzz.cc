// The archive reader of `kgym verify --bundle` (util/tar.cc, through
// util/gzip.cc): bytes from a bundle nobody vouches for. An input that
// starts with gzip's magic is inflated first (at most 1 MiB), as
// open_bundle does. What read_tar accepts must keep its promises: plain
// relative paths, each once, nothing nested under a file, within the
// limits; and it must survive writing: write_tar of the entries reads back
// as the same entries.
#include "fuzz/fuzz_util.h"
#include "util/gzip.h"
#include "util/tar.h"

#include <set>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::util;
  std::string_view input = kgym::fuzz::as_text(data, size);
  std::string inflated;
  if (input.size() >= 2 && input[0] == '\x1f' && input[1] == '\x8b') {
    auto out = gzip_decompress(input, 1 << 20);
    if (!out) {
      if (out.error().empty()) kgym::fuzz::contract_broken("a gzip error without a message");
      return 0;
    }
    if (out->size() > (1u << 20)) kgym::fuzz::contract_broken("gzip output beyond its limit");
    inflated = std::move(*out);
    input = inflated;
  }
  const TarLimits limits{.max_entries = 64, .max_file_bytes = 64 * 1024, .max_total_bytes = 256 * 1024};
  auto entries = read_tar(input, limits);
  if (!entries) {
    if (entries.error().empty()) kgym::fuzz::contract_broken("a tar error without a message");
    return 0;
  }
  if (entries->size() > limits.max_entries) kgym::fuzz::contract_broken("more entries than the limit");
  std::set<std::string> seen, files;
  std::uint64_t total = 0;
  for (const TarEntry& e : *entries) {
    if (unsafe_archive_path(e.path)) kgym::fuzz::contract_broken("an accepted entry has an unsafe path");
    if (!seen.insert(e.path).second) kgym::fuzz::contract_broken("an accepted entry repeats");
    if (e.type == TarEntry::Type::kDirectory && !e.data.empty())
      kgym::fuzz::contract_broken("a directory with data");
    if (e.data.size() > limits.max_file_bytes) kgym::fuzz::contract_broken("a file beyond its limit");
    total += e.data.size();
    if (e.type == TarEntry::Type::kFile) files.insert(e.path);
  }
  if (total > limits.max_total_bytes) kgym::fuzz::contract_broken("files beyond the total limit");
  for (const std::string& path : seen) {
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      if (files.contains(path.substr(0, slash))) kgym::fuzz::contract_broken("an entry nested under a file");
    }
  }
  auto written = write_tar(*entries);
  if (!written) kgym::fuzz::contract_broken("accepted entries cannot be written");
  auto again = read_tar(*written, limits);
  if (!again || again->size() != entries->size()) kgym::fuzz::contract_broken("written entries do not read back");
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const TarEntry &a = (*entries)[i], &b = (*again)[i];
    if (a.path != b.path || a.type != b.type || a.data != b.data)
      kgym::fuzz::contract_broken("an entry changes when written and read back");
  }
  return 0;
}
