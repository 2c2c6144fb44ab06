// load_config(): file -> flags -> validation -> Config. The top-level keys,
// `output`, `problem` and `monitor` are read here; the larger sections have
// their own files (config_agent.cc, config_verifier.cc, config_devices.cc).
#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/backend.h"
#include "core/config_document.h"
#include "core/config_reader.h"
#include "core/config_sections.h"

#ifndef KGYM_HOME_DIR
#error "KGYM_HOME_DIR must name the kgym source tree (set by CMakeLists.txt)"
#endif

namespace kgym {
namespace fs = std::filesystem;
using config_detail::ConfigDocument;
using config_detail::ConfigReader;
using config_detail::Entry;
using config_detail::Mapping;

bool VerifierConfig::compile_baseline() const {
  return std::find(baselines.begin(), baselines.end(), "compile") != baselines.end();
}

namespace {

constexpr std::string_view kTopKeys[] = {
    "bench_dir", "level",   "cases",    "devices", "concurrency", "output", "agent",    "verifier",
    "problem",   "monitor", "workflow", "sandbox", "samples",     "build",  "executor", "history"};
constexpr std::string_view kOutputKeys[] = {"root_dir", "run_name", "bundles"};
constexpr std::string_view kHistoryKeys[] = {"db"};
constexpr std::string_view kProblemKeys[] = {"overrides", "size", "precision"};
constexpr std::string_view kPrecisions[] = {"as_written", "float32", "float16", "bfloat16"};
constexpr std::string_view kSizeKeys[] = {"max_bytes", "max_forward_ms"};
constexpr std::string_view kMonitorKeys[] = {"poll_sec"};
constexpr std::string_view kPythonKeywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool is_python_identifier(std::string_view name) {
  return !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) == 0 &&
         std::ranges::all_of(name, is_name_char) &&
         std::ranges::find(kPythonKeywords, name) == std::end(kPythonKeywords);
}

// A single directory name: no separators, not "." or "..".
bool is_plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         std::ranges::all_of(name, [](char c) { return is_name_char(c) || c == '-' || c == '.'; });
}

void read_bench_dir(ConfigReader& reader, const Mapping& top, Config& config) {
  constexpr std::string_view kFix =
      "set bench_dir to the dataset directory (it holds level directories such as level1/), e.g. bench_dir: "
      "../data/sample";
  std::optional<Entry> at = top.get("bench_dir");
  if (!at) {
    reader.error(top.missing("bench_dir"), "is required", kFix);
    return;
  }
  auto dir = reader.path(*at, kFix);
  if (!dir) return;
  std::error_code ec;
  if (!fs::is_directory(*dir, ec)) {
    reader.error(
        *at,
        fmt::format("'{}' {}", dir->string(), fs::exists(*dir, ec) ? "is not a directory" : "does not exist"),
        kFix);
    return;
  }
  config.bench_dir = *dir;
}

void read_cases(ConfigReader& reader, const Entry& at, Config& config) {
  constexpr std::string_view kFix =
      "write a selector such as 19, '1:21,31' or 'level1=1,3;level2=9' (docs/cases.md)";
  if (at.node.IsScalar()) {  // "" selects every case of `level`
    config.cases = at.node.Scalar();
    return;
  }
  auto items = reader.list(at, false, kFix);
  if (!items) return;
  std::vector<std::string> parts;
  for (const Entry& item : *items) {
    if (auto part = reader.text(item, kFix)) parts.push_back(*part);
  }
  if (parts.size() == items->size()) config.cases = fmt::format("{}", fmt::join(parts, ","));
}

void read_output(ConfigReader& reader, const Entry& at, Config& config) {
  Mapping fields = reader.mapping(at, kOutputKeys);
  if (auto entry = fields.get("root_dir")) {
    if (auto dir =
            reader.path(*entry, "set the directory that receives run directories, e.g. root_dir: ./runs"))
      config.output_root = *dir;
  }
  if (auto entry = fields.get("run_name")) {
    constexpr std::string_view kFix = "use letters, digits, '.', '-' and '_' only, e.g. run_name: baseline-1";
    if (auto name = reader.text(*entry, kFix)) {
      if (is_plain_name(*name)) {
        config.run_name = *name;
      } else {
        reader.error(*entry, fmt::format("'{}' is not a plain directory name", *name), kFix);
      }
    }
  }
  if (auto entry = fields.get("bundles")) {
    if (auto on = reader.boolean(*entry)) config.output_bundles = *on;
  }
}

// A size constant's name, or an element of a tuple or list constant:
// `batch_size`, `shape[1]`.
bool is_size_name(std::string_view name) {
  auto bracket = name.find('[');
  if (bracket == std::string_view::npos) return is_python_identifier(name);
  std::string_view index = name.substr(bracket + 1);
  return is_python_identifier(name.substr(0, bracket)) && index.size() >= 2 && index.back() == ']' &&
         std::ranges::all_of(index.substr(0, index.size() - 1),
                             [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

void read_size(ConfigReader& reader, const Entry& at, Config& config) {
  constexpr std::string_view kFix =
      "set as_written, auto, or a budget such as {max_bytes: 67108864, max_forward_ms: 50}";
  if (at.node.IsScalar()) {
    auto word = reader.text(at, kFix);
    if (!word) return;
    if (*word == "auto") {
      config.size.kind = ProblemSize::Kind::kAuto;
    } else if (*word == "as_written") {
      config.size.kind = ProblemSize::Kind::kAsWritten;
    } else {
      reader.error(at, fmt::format("'{}' is not a size policy", *word), kFix);
    }
    return;
  }
  Mapping fields = reader.mapping(at, kSizeKeys);
  config.size.kind = ProblemSize::Kind::kAuto;
  if (auto entry = fields.get("max_bytes")) {
    if (auto bytes = reader.integer(*entry, 1, "set a byte count of at least 1, e.g. max_bytes: 67108864"))
      config.size.max_bytes = static_cast<unsigned long long>(*bytes);
  }
  if (auto entry = fields.get("max_forward_ms")) {
    if (auto ms = reader.number(*entry, 0, true, "set milliseconds greater than 0, e.g. max_forward_ms: 50"))
      config.size.max_forward_ms = *ms;
  }
}

void read_problem(ConfigReader& reader, const Entry& at, Config& config) {
  Mapping fields = reader.mapping(at, kProblemKeys);
  if (auto size = fields.get("size")) read_size(reader, *size, config);
  if (auto precision = fields.get("precision")) {
    if (auto value = reader.choice(*precision, kPrecisions)) config.precision = *value;
  }
  std::optional<Entry> overrides_entry = fields.get("overrides");
  if (!overrides_entry) return;
  Mapping overrides = reader.mapping(*overrides_entry, {});
  for (const Entry& entry : overrides.entries) {
    std::string name = entry.path.substr(overrides_entry->path.size() + 1);
    if (!is_size_name(name)) {
      reader.error(entry, fmt::format("'{}' is not a Python identifier", name),
                   "name a module-level integer of the problem file, e.g. batch_size (or an element of a "
                   "tuple constant, e.g. shape[1])");
      continue;
    }
    if (auto value = reader.integer(entry, LLONG_MIN, "set an integer, e.g. batch_size: 16"))
      config.overrides[name] = *value;
  }
}

void read_monitor(ConfigReader& reader, const Entry& at, Config& config) {
  Mapping fields = reader.mapping(at, kMonitorKeys);
  if (auto entry = fields.get("poll_sec")) {
    if (auto seconds = reader.number(*entry, 0, true, "set seconds greater than 0, e.g. poll_sec: 1"))
      config.monitor_poll = std::chrono::milliseconds(std::max<long long>(1, std::llround(*seconds * 1000)));
  }
}

void read_history(ConfigReader& reader, const Entry& at, Config& config) {
  Mapping fields = reader.mapping(at, kHistoryKeys);
  if (auto entry = fields.get("db")) {
    if (auto file = reader.path(*entry, "set the history database file, e.g. history: {db: ./history.db}"))
      config.history_db = *file;
  }
}

Config read_config(ConfigReader& reader) {
  Config config;
  config.source = reader.document().file();
  std::error_code ec;
  config.output_root = fs::current_path(ec) / "runs";

  Mapping top = reader.mapping(reader.root(), kTopKeys);
  read_bench_dir(reader, top, config);
  if (auto entry = top.get("level")) {
    constexpr std::string_view kFix = "name a level directory of bench_dir, e.g. level: level1";
    if (auto level = reader.text(*entry, kFix)) {
      if (is_plain_name(*level)) {
        config.level = *level;
      } else {
        reader.error(*entry, fmt::format("'{}' is not a plain directory name", *level), kFix);
      }
    }
  }
  if (auto entry = top.get("cases")) read_cases(reader, *entry, config);
  if (auto entry = top.get("concurrency")) {
    if (auto value =
            reader.integer(*entry, 1, "set how many cases run at once, at least 1, e.g. concurrency: 2"))
      config.concurrency = static_cast<int>(*value);
  }
  if (auto entry = top.get("samples")) {
    if (auto value = reader.integer(
            *entry, 1, "set how many independent generations each case gets, at least 1, e.g. samples: 5"))
      config.samples = static_cast<int>(*value);
  }
  if (auto entry = top.get("verifier"))
    config_detail::read_verifier(reader, *entry, config.verifier);
  else
    config_detail::read_verifier(reader, top.missing("verifier"), config.verifier);
  if (auto entry = top.get("devices"))
    config_detail::read_devices(reader, *entry, backend_of(config.verifier), config.devices);
  if (auto entry = top.get("output")) read_output(reader, *entry, config);
  if (auto entry = top.get("agent"))
    config_detail::read_agent(reader, *entry, config.agent, config.verifier.mode);
  else
    config_detail::read_agent(reader, top.missing("agent"), config.agent, config.verifier.mode);
  if (auto entry = top.get("workflow")) {
    config_detail::read_workflow(reader, *entry, config.workflow);
    if (config.agent.kind == "replay")
      reader.error(*entry, "needs an agent that runs",
                   "set agent.kind to command, opencode, claude or codex");
  }
  if (auto entry = top.get("problem")) read_problem(reader, *entry, config);
  if (auto entry = top.get("sandbox")) config_detail::read_sandbox(reader, *entry, config.sandbox);
  if (auto entry = top.get("build")) config_detail::read_build(reader, *entry, config.build);
  if (auto entry = top.get("monitor")) read_monitor(reader, *entry, config);
  if (auto entry = top.get("executor")) config_detail::read_executor(reader, *entry, config.executor);
  if (auto entry = top.get("history")) read_history(reader, *entry, config);
  return config;
}

std::expected<Config, ConfigError> load(const ConfigSource& source) {
  fs::path file = source.file ? fs::absolute(*source.file).lexically_normal() : bundled_default_config();
  if (!source.file && !fs::exists(file)) {
    return std::unexpected(ConfigError{fmt::format(
        "{}: the bundled default config does not exist; set KGYM_HOME to the kgym tree or pass a config file",
        file.string())});
  }
  auto document = ConfigDocument::load(file);
  if (!document) return std::unexpected(document.error());

  std::vector<std::string> errors;
  for (const std::string& item : source.sets) {
    if (auto applied = document->apply("--set", item); !applied) errors.push_back(applied.error());
  }
  for (const std::string& item : source.overrides) {
    if (auto applied = document->apply_override(item); !applied) errors.push_back(applied.error());
  }
  ConfigReader reader(*document);
  Config config = read_config(reader);
  std::vector<std::string> validation_errors = reader.errors();
  errors.insert(errors.end(), validation_errors.begin(), validation_errors.end());
  if (!errors.empty()) return std::unexpected(ConfigError{fmt::format("{}", fmt::join(errors, "\n"))});
  return config;
}

}  // namespace

std::expected<Config, ConfigError> load_config(const ConfigSource& source) {
  try {
    return load(source);
  } catch (const std::exception& e) {
    // yaml-cpp and std::filesystem may throw on conditions the checks above
    // do not foresee; a config problem must still come back as a value.
    return std::unexpected(ConfigError{fmt::format("cannot load the config: {}", e.what())});
  }
}

fs::path bundled_default_config() {
  const char* home = std::getenv("KGYM_HOME");
  fs::path root = home != nullptr && *home != '\0' ? fs::path(home) : fs::path(KGYM_HOME_DIR);
  return fs::absolute(root / "configs" / "default.yaml").lexically_normal();
}

}  // namespace kgym
