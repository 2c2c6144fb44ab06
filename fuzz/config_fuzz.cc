// The config reader and validator (core/config*.cc): a YAML file as a user
// or a generator wrote it, then --set items. load_config() answers every
// input with a Config or a ConfigError naming where and what; it never
// throws.
#include <fstream>

#include "core/config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym;
  // Part 0 is the file; each later part is one --set item.
  std::vector<std::string_view> parts = fuzz::split_parts(fuzz::as_text(data, size));
  const std::filesystem::path file = fuzz::scratch_dir() / "config.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(parts[0].data(), static_cast<std::streamsize>(parts[0].size()));
  }
  ConfigSource source;
  source.file = file;
  for (std::size_t i = 1; i < parts.size(); ++i) source.sets.emplace_back(parts[i]);
  auto config = load_config(source);
  if (!config && config.error().message.empty()) fuzz::contract_broken("a ConfigError without a message");
  return 0;
}
