// `kgym cases`: resolves a case selector against a dataset and prints the
// case ids, one per line. Runs nothing; useful to check a selector before a
// long run.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "core/case_set.h"
#include "core/config.h"
#include "util/json_text.h"

namespace kgym::app {
namespace {

struct CasesOptions {
  std::string config_file;
  std::vector<std::string> sets;
  std::string bench_dir;
  std::string level = "level1";
  std::string cases;
  bool json = false;
};

void print_error_lines(std::string_view message) {
  while (!message.empty()) {
    std::size_t end = message.find('\n');
    fmt::print(stderr, "kgym cases: {}\n", message.substr(0, end));
    if (end == std::string_view::npos) break;
    message.remove_prefix(end + 1);
  }
}

int run_cases(const CasesOptions& options, bool from_flags) {
  std::filesystem::path bench_dir = options.bench_dir;
  std::string level = options.level;
  std::string selector = options.cases;
  if (!from_flags) {
    ConfigSource source;
    if (!options.config_file.empty()) source.file = options.config_file;
    source.sets = options.sets;
    auto config = load_config(source);
    if (!config) {
      print_error_lines(config.error().message);
      return kExitUsage;
    }
    bench_dir = config->bench_dir;
    level = config->level;
    selector = config->cases;
  }
  if (std::error_code ec; from_flags && !std::filesystem::is_directory(bench_dir, ec)) {
    fmt::print(stderr, "kgym cases: --bench-dir {}: no such directory; pass the directory that holds level1/, "
                       "level2/, ...\n", bench_dir.string());
    return kExitUsage;
  }
  auto cases = select_cases(bench_dir, level, selector);
  if (!cases) {
    print_error_lines(cases.error().message);
    return kExitUsage;
  }
  std::string out;
  if (options.json) {
    // One object (docs/results.md "Machine-readable output").
    nlohmann::json list = nlohmann::json::array();
    for (const Case& c : *cases)
      list.push_back({{"id", c.id()}, {"level", c.level}, {"number", c.number}, {"name", c.name},
                      {"file", c.file.string()}});
    out = util::json_text({{"kgym_json", 1}, {"command", "cases"}, {"bench_dir", bench_dir.string()},
                           {"cases", std::move(list)}}, 2) +
          "\n";
  } else {
    for (const Case& c : *cases) out += c.id() + "\n";
  }
  std::fputs(out.c_str(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
}

}  // namespace

Command add_cases_command(CLI::App& root) {
  auto options = std::make_shared<CasesOptions>();
  CLI::App* app =
      root.add_subcommand("cases",
                          "List the case ids a selector resolves to, one per line; runs nothing.\n"
                          "Selector grammar: docs/cases.md.");
  CLI::Option* config = app->add_option("--config", options->config_file,
                                        "YAML config; its bench_dir, level and cases are used");
  CLI::Option* set = app->add_option("--set", options->sets, "override a config key, KEY=VALUE (repeatable)")
                         ->expected(1)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI::Option* bench_dir =
      app->add_option("--bench-dir", options->bench_dir,
                      "dataset directory (holds level1/, level2/, ...); no config is read");
  app->add_option("--level", options->level, "default level for bare ids")
      ->capture_default_str()
      ->needs(bench_dir);
  app->add_option("--cases", options->cases, "selector, e.g. '1:21,31' or 'level1=1,3;level2=9'")
      ->needs(bench_dir);
  app->add_flag("--json", options->json, "print one JSON object (the cases with their files) instead");
  bench_dir->excludes(config)->excludes(set);
  return Command{app, [options, bench_dir] { return run_cases(*options, bench_dir->count() > 0); }};
}

}  // namespace kgym::app
