#include "core/case_set.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/selector.h"
#include "util/nearest.h"

namespace kgym {

namespace fs = std::filesystem;

std::string Case::stem() const { return fmt::format("{}_{}", number, name); }
std::string Case::id() const { return fmt::format("{}/{}", level, stem()); }

namespace {

struct Level {
  std::string name;
  std::vector<Case> cases;          // by number
  std::vector<std::string> errors;  // duplicate numbers, unusable names
};

// "<N>_<Name>.py" -> (N, Name); anything else is not a problem file.
std::optional<std::pair<int, std::string>> parse_problem_file(const std::string& file, std::string& error) {
  constexpr std::string_view kExt = ".py";
  if (file.size() <= kExt.size() || !file.ends_with(kExt)) return std::nullopt;
  std::string_view stem = std::string_view(file).substr(0, file.size() - kExt.size());
  std::size_t digits = 0;
  while (digits < stem.size() && std::isdigit(static_cast<unsigned char>(stem[digits]))) ++digits;
  if (digits == 0 || digits + 1 >= stem.size() || stem[digits] != '_') return std::nullopt;
  int number = 0;
  auto [ptr, ec] = std::from_chars(stem.data(), stem.data() + digits, number);
  if (ec != std::errc{}) {
    error = fmt::format("its id is too large; rename it to a number below 2147483648");
    return std::nullopt;
  }
  return std::pair{number, std::string(stem.substr(digits + 1))};
}

Level scan_level(const fs::path& dir, const std::string& name) {
  Level level{name, {}, {}};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string file = it->path().filename().string();
    std::string error;
    auto parsed = parse_problem_file(file, error);
    if (!error.empty())
      level.errors.push_back(fmt::format("problem file {}: {}", it->path().string(), error));
    if (!parsed || !it->is_regular_file(ec)) continue;
    level.cases.push_back(Case{name, parsed->first, parsed->second, it->path()});
  }
  if (ec) level.errors.push_back(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  std::ranges::sort(level.cases, {}, [](const Case& c) { return std::pair{c.number, c.name}; });
  for (std::size_t i = 1; i < level.cases.size(); ++i) {
    const Case& a = level.cases[i - 1];
    const Case& b = level.cases[i];
    if (a.number != b.number) continue;
    level.errors.push_back(
        fmt::format("{} has two problems numbered {}: {} and {}; rename one so every id "
                    "in a level is unique",
                    name, a.number, a.file.string(), b.file.string()));
  }
  return level;
}

// Levels are the subdirectories that hold at least one problem file.
std::expected<std::map<std::string, Level>, std::string> scan_dataset(const fs::path& bench_dir) {
  std::error_code ec;
  if (bench_dir.empty() || !fs::is_directory(bench_dir, ec)) {
    return std::unexpected(
        fmt::format("dataset directory '{}' does not exist; set bench_dir to the "
                    "directory that holds level1/, level2/, ...",
                    bench_dir.string()));
  }
  std::map<std::string, Level> levels;
  for (fs::directory_iterator it(bench_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code dir_ec;
    if (name.starts_with(".") || !it->is_directory(dir_ec)) continue;
    Level level = scan_level(it->path(), name);
    if (!level.cases.empty() || !level.errors.empty()) levels.emplace(name, std::move(level));
  }
  if (ec) return std::unexpected(fmt::format("cannot list {}: {}", bench_dir.string(), ec.message()));
  return levels;
}

std::string level_names(const std::map<std::string, Level>& levels) {
  std::vector<std::string> names;
  for (const auto& [name, level] : levels) names.push_back(name);
  std::ranges::sort(names, [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Up to three existing stems closest to a missing number: the nearest ids.
std::vector<std::string> near_numbers(const Level& level, int number) {
  std::vector<const Case*> by_distance;
  for (const Case& c : level.cases) by_distance.push_back(&c);
  std::ranges::stable_sort(
      by_distance, {}, [&](const Case* c) { return std::abs(static_cast<long long>(c->number) - number); });
  if (by_distance.size() > 3) by_distance.resize(3);
  std::ranges::sort(by_distance, {}, &Case::number);
  std::vector<std::string> out;
  for (const Case* c : by_distance) out.push_back(c->stem());
  return out;
}

// Existing stems a mistyped "<N>_<Name>" most likely meant: the case with
// that number, and cases with that name (ignoring case) under another number;
// only when no name matches, names a few edits away.
std::vector<std::string> near_stems(const Level& level, const SelectorItem& item) {
  std::string wanted = item.stem.ends_with(".py") ? item.stem.substr(0, item.stem.size() - 3) : item.stem;
  std::string wanted_name = lower(wanted.substr(wanted.find('_') + 1));
  bool name_exists =
      std::ranges::any_of(level.cases, [&](const Case& c) { return lower(c.name) == wanted_name; });
  std::vector<std::pair<std::size_t, std::string>> scored;  // (rank, stem)
  for (const Case& c : level.cases) {
    std::string name = lower(c.name);
    std::size_t distance = util::edit_distance(name, wanted_name);
    if (c.number == item.first || name == wanted_name) {
      scored.emplace_back(distance, c.stem());
    } else if (!name_exists && distance <= std::max<std::size_t>(2, wanted_name.size() / 4)) {
      scored.emplace_back(distance + 1, c.stem());
    }
  }
  std::ranges::stable_sort(scored, {}, &std::pair<std::size_t, std::string>::first);
  std::vector<std::string> out;
  for (auto& [rank, stem] : scored) {
    if (out.size() < 3) out.push_back(std::move(stem));
  }
  return out;
}

std::string ids_span(const Level& level) {
  if (level.cases.empty()) return fmt::format("{} has no problems", level.name);
  return fmt::format("ids in {} run {}..{}", level.name, level.cases.front().number,
                     level.cases.back().number);
}

class Resolver {
 public:
  Resolver(std::string_view selector, const std::map<std::string, Level>& levels, const fs::path& bench_dir,
           const std::string& default_level)
      : selector_(selector), levels_(levels), bench_dir_(bench_dir), default_level_(default_level) {}

  // Errors about the selector point into it; errors about the dataset have
  // position 0 and come first.
  void error(std::size_t position, const std::string& message) {
    errors_.emplace_back(position,
                         fmt::format("cases '{}' at position {}: {}", selector_, position, message));
  }
  void error(const std::string& message) { errors_.emplace_back(0, message); }
  bool failed() const { return !errors_.empty(); }
  std::vector<Case>& selected() { return selected_; }

  SelectorError report() {
    std::ranges::stable_sort(errors_, {}, &std::pair<std::size_t, std::string>::first);
    std::vector<std::string> lines;
    for (auto& [position, line] : errors_) lines.push_back(std::move(line));
    return SelectorError{fmt::format("{}", fmt::join(lines, "\n"))};
  }

  void resolve(const SelectorGroup& group) {
    const std::string& name = group.level ? *group.level : default_level_;
    auto found = levels_.find(name);
    if (found == levels_.end()) {
      if (!reported_levels_.insert(name).second) return;
      if (group.level) {
        error(group.position, fmt::format("no level '{}' in {}; levels there: {}", name, bench_dir_.string(),
                                          level_names(levels_)));
      } else {
        error(
            fmt::format("default level '{}' not found in {}; levels there: {}; set level, or name one "
                        "in the selector (LEVEL=...)",
                        name, bench_dir_.string(), level_names(levels_)));
      }
      return;
    }
    const Level& level = found->second;
    if (reported_levels_.insert(name).second) {
      for (const std::string& e : level.errors) error(e);
    }
    if (group.items.empty()) {
      selected_.insert(selected_.end(), level.cases.begin(), level.cases.end());
      return;
    }
    for (const SelectorItem& item : group.items) resolve_item(level, item);
  }

 private:
  void resolve_item(const Level& level, const SelectorItem& item) {
    auto first = std::ranges::lower_bound(level.cases, item.first, {}, &Case::number);
    auto last = std::ranges::upper_bound(level.cases, item.last, {}, &Case::number);
    switch (item.kind) {
      case SelectorItem::Kind::kRange:
        if (first == last) {
          error(item.position,
                fmt::format("range {} matches no problem in {}; {}", item.text, level.name, ids_span(level)));
        }
        selected_.insert(selected_.end(), first, last);
        return;
      case SelectorItem::Kind::kNumber:
        if (first == last) {
          error(item.position, fmt::format("no case {} in {}; nearby: {}", item.text, level.name,
                                           fmt::join(near_numbers(level, item.first), ", ")));
        }
        selected_.insert(selected_.end(), first, last);
        return;
      case SelectorItem::Kind::kStem:
        if (first != last && first->stem() == item.stem) {
          selected_.push_back(*first);
          return;
        }
        std::vector<std::string> near = near_stems(level, item);
        if (near.empty()) {
          error(item.position, fmt::format("no case {} in {}; {}", item.stem, level.name, ids_span(level)));
        } else {
          error(item.position, fmt::format("no case {} in {}; did you mean {}?", item.stem, level.name,
                                           fmt::join(near, " or ")));
        }
        return;
    }
  }

  std::string_view selector_;
  const std::map<std::string, Level>& levels_;
  const fs::path& bench_dir_;
  const std::string& default_level_;
  std::set<std::string> reported_levels_;
  std::vector<std::pair<std::size_t, std::string>> errors_;
  std::vector<Case> selected_;
};

}  // namespace

std::expected<std::vector<Case>, SelectorError> select_cases(const fs::path& bench_dir,
                                                             const std::string& default_level,
                                                             const std::string& selector) {
  std::error_code ec;
  fs::path root = fs::absolute(bench_dir, ec).lexically_normal();
  if (ec) root = bench_dir;
  auto levels = scan_dataset(root);
  std::map<std::string, Level> no_levels;
  Resolver resolver(selector, levels ? *levels : no_levels, root, default_level);
  if (!levels) resolver.error(levels.error());
  ParsedSelector parsed = parse_selector(selector);
  for (const SelectorParseError& e : parsed.errors) resolver.error(e.position, e.message);
  if (levels) {
    for (const SelectorGroup& group : parsed.groups) resolver.resolve(group);
  }
  if (resolver.failed()) return std::unexpected(resolver.report());

  std::vector<Case> cases = std::move(resolver.selected());
  auto order = [](const Case& a, const Case& b) {
    if (a.level != b.level) return natural_less(a.level, b.level);
    return a.number < b.number;
  };
  std::ranges::sort(cases, order);
  auto same = [](const Case& a, const Case& b) { return a.level == b.level && a.number == b.number; };
  auto [dup_begin, dup_end] = std::ranges::unique(cases, same);
  cases.erase(dup_begin, dup_end);
  return cases;
}

}  // namespace kgym
