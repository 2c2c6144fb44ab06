#pragma once
// The configuration as a YAML document before validation: the file, plus
// every --set/--override applied on top, remembering which flag set which
// key so errors can point at the file line or at the flag. Internal to
// load_config(); nothing outside core/ includes this.
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/config.h"

namespace kgym::config_detail {

class ConfigDocument {
 public:
  // Reads and parses `file` (absolute). A missing file, an unreadable file
  // and a YAML syntax error are errors naming the file (and line).
  static std::expected<ConfigDocument, ConfigError> load(const std::filesystem::path& file);

  // Applies one "KEY=VALUE" item given with `flag` ("--set"). KEY is a dotted
  // path; VALUE is parsed as YAML (scalar or flow collection). Intermediate
  // mappings are created; a later item replaces what an earlier one set.
  // Returns an error message naming the flag when the item is malformed.
  std::expected<void, std::string> apply(std::string_view flag, std::string_view item);

  // "--override NAME=VALUE" is "--set problem.overrides.NAME=VALUE".
  std::expected<void, std::string> apply_override(std::string_view item);

  const YAML::Node& root() const { return root_; }
  const std::filesystem::path& file() const { return file_; }

  // Where a message about `key_path` is reported: "FILE:LINE" for values
  // from the file (line is 1-based; 0 means unknown and reports line 1), or
  // the flag item ("--set a.b=c") that set the key or one of its parents.
  std::string location(std::string_view key_path, int line) const;

  // Whether `key_path` (or a parent of it) was set by a flag.
  bool from_flag(std::string_view key_path) const { return flag_for(key_path) != nullptr; }

  // Relative paths found at `key_path` resolve against this directory: the
  // file's directory, or the current directory for values from a flag.
  std::filesystem::path base_dir(std::string_view key_path) const;

 private:
  ConfigDocument(std::filesystem::path file, YAML::Node root)
      : file_(std::move(file)), root_(std::move(root)) {}
  // The flag item that last set `key_path` or a parent of it; nullptr if none.
  const std::string* flag_for(std::string_view key_path) const;
  void set_path(const std::vector<std::string>& segments, const YAML::Node& value);
  // The dotted path of the first of `segments` the document lacks; "" when
  // it has them all.
  std::string first_missing_prefix(const std::vector<std::string>& segments) const;

  std::filesystem::path file_;
  YAML::Node root_;
  // (dotted key path, flag item), in the order applied.
  std::vector<std::pair<std::string, std::string>> flag_origins_;
};

// Splits "a.b.c" into its segments; an empty segment yields an empty vector.
std::vector<std::string> split_key_path(std::string_view path);

}  // namespace kgym::config_detail
