// `kgym repro CASE_DIR [-o FILE]`: the reproduction bundle of one verified
// case of a run (docs/repro.md); `kgym verify --bundle FILE` re-runs it.
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "app/command.h"
#include "core/case_paths.h"
#include "verify/repro_bundle.h"

namespace kgym::app {
namespace {

namespace fs = std::filesystem;

struct ReproOptions {
  std::string case_dir;
  std::string out;  // default: CASE_DIR/repro.tar.gz
};

int run_repro(const ReproOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.case_dir, ec)) {
    fmt::print(stderr,
               "kgym repro: {}: not a directory; give a case's directory of a run "
               "(RUN_DIR/cases/<level>/<N>_<Name>)\n",
               o.case_dir);
    return kExitUsage;
  }
  fs::path out = o.out.empty() ? CasePaths{o.case_dir}.repro_bundle() : fs::path(o.out);
  if (auto written = verify::write_case_bundle(o.case_dir, out); !written) {
    fmt::print(stderr, "kgym repro: {}\n", written.error());
    return kExitUsage;
  }
  fmt::print("wrote {} ({} bytes)\nre-run it with: kgym verify --bundle {}\n", out.string(),
             fs::file_size(out, ec), out.string());
  return kExitOk;
}

}  // namespace

Command add_repro_command(CLI::App& root) {
  auto options = std::make_shared<ReproOptions>();
  CLI::App* app = root.add_subcommand(
      "repro", "write a reproduction bundle (.tar.gz) of one verified case; kgym verify --bundle re-runs it");
  app->add_option("CASE_DIR", options->case_dir, "the case's directory: RUN_DIR/cases/<level>/<N>_<Name>")
      ->required();
  app->add_option("-o,--output", options->out, "the bundle to write (default: CASE_DIR/repro.tar.gz)");
  return Command{app, [options] { return run_repro(*options); }};
}

}  // namespace kgym::app
