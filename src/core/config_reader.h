#pragma once
// Typed, error-collecting access to a ConfigDocument. Every read that fails
// records one message "LOCATION: key 'a.b': PROBLEM; FIX" and returns
// nullopt, so validation goes on and the user sees every error at once.
// Internal to load_config().
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/config_document.h"

namespace kgym::config_detail {

// One value of the document: its dotted key path and the 1-based line of
// its key (0 when the value was made by a flag or is the whole document).
struct Entry {
  std::string path;
  YAML::Node node;
  int line = 0;
};

// The checked keys of one mapping.
struct Mapping {
  Entry self;
  std::vector<Entry> entries;  // allowed keys only, in file order, first of duplicates

  // The value of `key`; nullopt when absent or null (`key:` with no value),
  // which means "use the default".
  std::optional<Entry> get(std::string_view key) const;
  // The path and line to report a missing `key` at.
  Entry missing(std::string_view key) const;
};

// The allowed name nearest to `name` when it is a plausible typo; "" if none.
std::string nearest_name(std::string_view name, std::span<const std::string_view> allowed);

// "'abc'", "a list", "a mapping": how a value reads in a message.
std::string describe(const YAML::Node& node);

class ConfigReader {
 public:
  explicit ConfigReader(const ConfigDocument& document) : document_(document) {}

  const ConfigDocument& document() const { return document_; }
  Entry root() const { return Entry{"", document_.root(), 1}; }

  void error(const Entry& at, std::string_view problem, std::string_view fix);
  // Every error recorded, file errors by line, then those of flags in order.
  std::vector<std::string> errors() const;

  // The mapping at `at`. Reports a value that is not a mapping, duplicate
  // keys and keys outside `allowed` (naming the nearest allowed key and
  // listing all of them). With `allowed` empty every key is accepted (maps
  // of user names such as agent.env). An absent/null value is an empty
  // mapping.
  Mapping mapping(const Entry& at, std::span<const std::string_view> allowed);

  std::optional<long long> integer(const Entry& at, long long min, std::string_view fix);
  // A finite number; `min_exclusive` makes `min` itself invalid.
  std::optional<double> number(const Entry& at, double min, bool min_exclusive, std::string_view fix);
  std::optional<bool> boolean(const Entry& at);
  // Any scalar, as text; an empty string is an error.
  std::optional<std::string> text(const Entry& at, std::string_view fix);
  std::optional<std::string> choice(const Entry& at, std::span<const std::string_view> allowed);
  // A path, made absolute against the file's directory (or the current
  // directory for a flag value) and normalized.
  std::optional<std::filesystem::path> path(const Entry& at, std::string_view fix);
  // The same, absolute but with its symbolic links kept: an interpreter in
  // a venv is a link to the machine's python, and only the link's path
  // makes it the venv's.
  std::optional<std::filesystem::path> path_keeping_links(const Entry& at, std::string_view fix);
  // The items of a list (each with path "key.INDEX" and its own line). A
  // single scalar is accepted as a one-item list when `scalar_ok`.
  std::optional<std::vector<Entry>> list(const Entry& at, bool scalar_ok, std::string_view fix);

 private:
  struct Error {
    int line;  // sort key: the file line, or INT_MAX for a flag
    std::string message;
  };
  const ConfigDocument& document_;
  std::vector<Error> errors_;
};

}  // namespace kgym::config_detail
