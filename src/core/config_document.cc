#include "core/config_document.h"

#include <system_error>

#include <fmt/format.h>

#include "util/fs.h"

namespace kgym::config_detail {
namespace fs = std::filesystem;

namespace {

bool is_same_or_parent(std::string_view parent, std::string_view path) {
  if (!path.starts_with(parent)) return false;
  return path.size() == parent.size() || path[parent.size()] == '.';
}

// Parses the VALUE of a KEY=VALUE item the way it would read in the file.
std::expected<YAML::Node, std::string> parse_value(std::string_view flag_item, std::string_view value) {
  try {
    return YAML::Load(std::string(value));
  } catch (const YAML::Exception& e) {
    return std::unexpected(
        fmt::format("{}: the value is not valid YAML ({}); quote it (KEY='VALUE') or fix its brackets, e.g. "
                    "devices=[0,1]",
                    flag_item, e.msg));
  }
}

}  // namespace

std::vector<std::string> split_key_path(std::string_view path) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view segment = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (segment.empty()) return {};
    segments.emplace_back(segment);
    if (dot == std::string_view::npos) return segments;
    start = dot + 1;
  }
}

std::expected<ConfigDocument, ConfigError> ConfigDocument::load(const fs::path& file) {
  std::error_code ec;
  fs::file_status status = fs::status(file, ec);
  if (!fs::exists(status)) {
    return std::unexpected(ConfigError{
        fmt::format("{}: config file does not exist; check the path (no other config is used in its place)",
                    file.string())});
  }
  if (fs::is_directory(status)) {
    return std::unexpected(
        ConfigError{fmt::format("{}: is a directory, not a config file; pass a YAML file", file.string())});
  }
  auto text = util::read_file(file);
  if (!text)
    return std::unexpected(ConfigError{fmt::format("{}; check the file's permissions", text.error())});

  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::ParserException& e) {
    return std::unexpected(ConfigError{fmt::format(
        "{}:{}: YAML syntax error: {}; check the indentation, quoting and brackets on this line and the one "
        "before",
        file.string(), e.mark.line + 1, e.msg)});
  } catch (const YAML::Exception& e) {
    return std::unexpected(ConfigError{fmt::format("{}: cannot parse YAML: {}", file.string(), e.what())});
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) {
    return std::unexpected(ConfigError{fmt::format(
        "{}:{}: the document is not a mapping; write one 'key: value' per line (see configs/default.yaml)",
        file.string(), root.Mark().is_null() ? 1 : root.Mark().line + 1)});
  }
  return ConfigDocument(file, root);
}

std::expected<void, std::string> ConfigDocument::apply(std::string_view flag, std::string_view item) {
  std::string flag_item = fmt::format("{} {}", flag, item);
  size_t eq = item.find('=');
  if (eq == std::string_view::npos) {
    return std::unexpected(fmt::format(
        "{}: missing '='; write {} KEY=VALUE with a dotted key, e.g. {} output.root_dir=/tmp/runs", flag_item,
        flag, flag));
  }
  std::string_view key = item.substr(0, eq);
  std::vector<std::string> segments = split_key_path(key);
  if (segments.empty()) {
    return std::unexpected(fmt::format(
        "{}: the key '{}' is empty or has an empty part; write {} KEY=VALUE with a dotted key, e.g. {} "
        "verifier.trials=5",
        flag_item, key, flag, flag));
  }
  auto value = parse_value(flag_item, item.substr(eq + 1));
  if (!value) return std::unexpected(value.error());

  std::string created = first_missing_prefix(segments);
  set_path(segments, *value);
  std::string path(key);
  std::erase_if(flag_origins_, [&](const auto& origin) { return is_same_or_parent(path, origin.first); });
  flag_origins_.emplace_back(path, flag_item);
  // A key the flag brought into the document (`--set foo.bar=1` makes
  // `foo`): an error about it is the flag's too.
  if (!created.empty() && created != path) flag_origins_.emplace_back(created, flag_item);
  return {};
}

std::string ConfigDocument::first_missing_prefix(const std::vector<std::string>& segments) const {
  YAML::Node current = YAML::Clone(root_);
  std::string prefix;
  for (const std::string& segment : segments) {
    prefix += (prefix.empty() ? "" : ".") + segment;
    if (!current.IsMap() || !current[segment].IsDefined() || current[segment].IsNull()) return prefix;
    current.reset(current[segment]);
  }
  return "";
}

std::expected<void, std::string> ConfigDocument::apply_override(std::string_view item) {
  size_t eq = item.find('=');
  std::string_view name = item.substr(0, eq == std::string_view::npos ? item.size() : eq);
  if (eq == std::string_view::npos || name.empty() || name.find('.') != std::string_view::npos) {
    return std::unexpected(fmt::format(
        "--override {}: expected NAME=VALUE with NAME a problem parameter (a Python identifier) and VALUE an "
        "integer, e.g. --override batch_size=16",
        item));
  }
  auto value = parse_value(fmt::format("--override {}", item), item.substr(eq + 1));
  if (!value) return std::unexpected(value.error());

  std::string path = fmt::format("problem.overrides.{}", name);
  set_path(split_key_path(path), *value);
  std::erase_if(flag_origins_, [&](const auto& origin) { return is_same_or_parent(path, origin.first); });
  flag_origins_.emplace_back(path, fmt::format("--override {}", item));
  return {};
}

void ConfigDocument::set_path(const std::vector<std::string>& segments, const YAML::Node& value) {
  YAML::Node current = root_;  // shares root_'s data; writes land in the document
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    if (!current[segments[i]].IsMap()) current[segments[i]] = YAML::Node(YAML::NodeType::Map);
    current.reset(current[segments[i]]);
  }
  current[segments.back()] = value;
}

const std::string* ConfigDocument::flag_for(std::string_view key_path) const {
  const std::string* best = nullptr;
  size_t best_length = 0;
  for (const auto& [path, flag_item] : flag_origins_) {
    if (is_same_or_parent(path, key_path) && (best == nullptr || path.size() > best_length)) {
      best = &flag_item;
      best_length = path.size();
    }
  }
  return best;
}

std::string ConfigDocument::location(std::string_view key_path, int line) const {
  if (const std::string* flag_item = flag_for(key_path)) return *flag_item;
  return fmt::format("{}:{}", file_.string(), line > 0 ? line : 1);
}

fs::path ConfigDocument::base_dir(std::string_view key_path) const {
  if (flag_for(key_path) != nullptr) {
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    return ec ? fs::path("/") : cwd;
  }
  return file_.parent_path();
}

}  // namespace kgym::config_detail
