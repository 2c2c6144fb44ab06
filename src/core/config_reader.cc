#include "core/config_reader.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/config_predecessor.h"
#include "util/nearest.h"

namespace kgym::config_detail {
namespace fs = std::filesystem;

namespace {

int line_of(const YAML::Node& node, int fallback) {
  return node.Mark().is_null() ? fallback : node.Mark().line + 1;
}

std::string child_path(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

}  // namespace

std::optional<Entry> Mapping::get(std::string_view key) const {
  std::string path = child_path(self.path, key);
  for (const Entry& entry : entries) {
    if (entry.path == path) return entry.node.IsNull() ? std::nullopt : std::optional<Entry>(entry);
  }
  return std::nullopt;
}

Entry Mapping::missing(std::string_view key) const {
  return Entry{child_path(self.path, key), YAML::Node(), self.line};
}

std::string nearest_name(std::string_view name, std::span<const std::string_view> allowed) {
  // torch's aliases of dtype names (and pypto-gym's name of a backend) are
  // not near the names they stand for.
  constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"float", "float32"}, {"double", "float64"}, {"half", "float16"}, {"long", "int64"}, {"int", "int32"},
      {"ascend", "npu"}};  // pypto-gym's name of the backend
  for (auto [alias, canonical] : kAliases) {
    if (name == alias && std::ranges::find(allowed, canonical) != allowed.end())
      return std::string(canonical);
  }
  return util::nearest_name(name, allowed);
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

void ConfigReader::error(const Entry& at, std::string_view problem, std::string_view fix) {
  std::string where = document_.location(at.path, at.line);
  std::string message = at.path.empty() ? fmt::format("{}: {}; {}", where, problem, fix)
                                        : fmt::format("{}: key '{}': {}; {}", where, at.path, problem, fix);
  bool from_flag = document_.from_flag(at.path);
  errors_.push_back(Error{from_flag ? INT_MAX : at.line, std::move(message)});
}

std::vector<std::string> ConfigReader::errors() const {
  std::vector<Error> sorted = errors_;
  std::ranges::stable_sort(sorted, {}, &Error::line);
  std::vector<std::string> messages;
  for (Error& error : sorted) messages.push_back(std::move(error.message));
  return messages;
}

Mapping ConfigReader::mapping(const Entry& at, std::span<const std::string_view> allowed) {
  Mapping result{at, {}};
  if (!at.node.IsDefined() || at.node.IsNull()) return result;
  if (!at.node.IsMap()) {
    error(at, fmt::format("expected a mapping of keys, found {}", describe(at.node)),
          allowed.empty()
              ? "write 'NAME: value' pairs, one per line"
              : fmt::format("write one key per line; allowed keys: {}", fmt::join(allowed, ", ")));
    return result;
  }
  std::set<std::string> seen;
  for (auto it = at.node.begin(); it != at.node.end(); ++it) {
    // A copy: it-> yields a temporary pair, a reference into it would dangle.
    YAML::Node key = it->first;
    int line = line_of(key, at.line);
    if (!key.IsScalar() || key.Scalar().empty()) {
      error(Entry{at.path, key, line}, fmt::format("a key is {}", describe(key)), "keys are plain names");
      continue;
    }
    Entry entry{child_path(at.path, key.Scalar()), it->second, line};
    if (!allowed.empty() && std::ranges::find(allowed, key.Scalar()) == allowed.end()) {
      if (auto instead = predecessor_key(entry.path)) {
        error(entry, "unknown key", *instead);
        // Its section's keys each have their own place in kgym.
        if (entry.node.IsMap()) {
          for (auto child = entry.node.begin(); child != entry.node.end(); ++child) {
            if (!child->first.IsScalar()) continue;
            Entry inner{child_path(entry.path, child->first.Scalar()), child->second,
                        line_of(child->first, entry.line)};
            if (auto moved = predecessor_key(inner.path)) error(inner, "unknown key", *moved);
          }
        }
        continue;
      }
      std::string nearest = nearest_name(key.Scalar(), allowed);
      std::string hint = nearest.empty() ? "" : fmt::format("did you mean '{}'? ", nearest);
      std::string where = at.path.empty() ? "at the top level" : fmt::format("under '{}'", at.path);
      error(entry, "unknown key", fmt::format("{}allowed {}: {}", hint, where, fmt::join(allowed, ", ")));
      continue;
    }
    if (!seen.insert(key.Scalar()).second) {
      error(entry, "duplicate key", "keep one of the entries (YAML keys must be unique)");
      continue;
    }
    result.entries.push_back(std::move(entry));
  }
  return result;
}

std::optional<long long> ConfigReader::integer(const Entry& at, long long min, std::string_view fix) {
  long long value = 0;
  if (!at.node.IsScalar() || !YAML::convert<long long>::decode(at.node, value)) {
    error(at, fmt::format("expected an integer, found {}", describe(at.node)), fix);
    return std::nullopt;
  }
  if (value < min) {
    error(at, fmt::format("{} is below the minimum {}", value, min), fix);
    return std::nullopt;
  }
  return value;
}

std::optional<double> ConfigReader::number(const Entry& at, double min, bool min_exclusive,
                                           std::string_view fix) {
  double value = 0;
  if (!at.node.IsScalar() || !YAML::convert<double>::decode(at.node, value) || !std::isfinite(value)) {
    error(at, fmt::format("expected a number, found {}", describe(at.node)), fix);
    return std::nullopt;
  }
  if (value < min || (min_exclusive && value == min)) {
    error(at, fmt::format("{} must be {} {}", value, min_exclusive ? "greater than" : "at least", min), fix);
    return std::nullopt;
  }
  return value;
}

std::optional<bool> ConfigReader::boolean(const Entry& at) {
  bool value = false;
  if (!at.node.IsScalar() || !YAML::convert<bool>::decode(at.node, value)) {
    error(at, fmt::format("expected true or false, found {}", describe(at.node)), "write true or false");
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> ConfigReader::text(const Entry& at, std::string_view fix) {
  if (!at.node.IsScalar() || at.node.Scalar().empty()) {
    error(at, fmt::format("expected a non-empty string, found {}", describe(at.node)), fix);
    return std::nullopt;
  }
  return at.node.Scalar();
}

std::optional<std::string> ConfigReader::choice(const Entry& at, std::span<const std::string_view> allowed) {
  std::string fix = fmt::format("use one of: {}", fmt::join(allowed, ", "));
  auto value = text(at, fix);
  if (!value) return std::nullopt;
  if (std::ranges::find(allowed, *value) == allowed.end()) {
    std::string nearest = nearest_name(*value, allowed);
    std::string hint = nearest.empty() ? "" : fmt::format("did you mean '{}'? ", nearest);
    error(at, fmt::format("'{}' is not a valid value", *value), hint + fix);
    return std::nullopt;
  }
  return value;
}

std::optional<fs::path> ConfigReader::path(const Entry& at, std::string_view fix) {
  auto value = text(at, fix);
  if (!value) return std::nullopt;
  fs::path raw(*value);
  fs::path absolute = raw.is_absolute() ? raw : document_.base_dir(at.path) / raw;
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

std::optional<fs::path> ConfigReader::path_keeping_links(const Entry& at, std::string_view fix) {
  auto value = text(at, fix);
  if (!value) return std::nullopt;
  fs::path raw(*value);
  return (raw.is_absolute() ? raw : document_.base_dir(at.path) / raw).lexically_normal();
}

std::optional<std::vector<Entry>> ConfigReader::list(const Entry& at, bool scalar_ok, std::string_view fix) {
  if (scalar_ok && at.node.IsScalar()) return std::vector<Entry>{at};
  if (!at.node.IsSequence()) {
    error(at, fmt::format("expected a list, found {}", describe(at.node)), fix);
    return std::nullopt;
  }
  std::vector<Entry> items;
  for (size_t i = 0; i < at.node.size(); ++i) {
    YAML::Node item = at.node[i];
    items.push_back(Entry{fmt::format("{}.{}", at.path, i), item, line_of(item, at.line)});
  }
  return items;
}

}  // namespace kgym::config_detail
