// `kgym zygote-run`: runs one `kgym_worker.py` mode in a process forked
// from a warm worker parent and exits with its status (worker/zygote.h
// run_forked). `kgym run` starts it for the reference probe so a probe does
// not pay a Python and torch start; not meant to be typed by hand, so it is
// hidden from --help.
#include <memory>

#include <fmt/format.h>

#include "app/command.h"
#include "worker/zygote.h"

namespace kgym::app {
namespace {

// How long the zygote may take to accept: at the start of a run it may
// still be importing torch.
constexpr auto kForkWait = std::chrono::seconds(120);

struct ZygoteRunOptions {
  std::string socket;
  std::string cwd = ".";
  std::vector<std::string> env;
  std::vector<std::string> args;
};

int run_zygote_run_command(const ZygoteRunOptions& o) {
  worker::ForkRequest request{.args = o.args, .env = o.env, .cwd = std::filesystem::absolute(o.cwd)};
  auto status = worker::run_forked(o.socket, request, worker::Clock::now() + kForkWait);
  if (!status) {
    fmt::print(stderr, "kgym zygote-run: {}\n", status.error());
    return kExitUsage;
  }
  return *status;
}

}  // namespace

Command add_zygote_run_command(CLI::App& root) {
  auto options = std::make_shared<ZygoteRunOptions>();
  CLI::App* app = root.add_subcommand("zygote-run", "run one worker mode forked from a warm worker parent");
  app->group("");  // internal: hidden from --help
  app->add_option("--socket", options->socket, "the warm worker parent's socket")->required();
  app->add_option("--cwd", options->cwd, "working directory of the forked worker");
  app->add_option("--env", options->env, "NAME=VALUE added to the worker's environment");
  // Everything after `--` is the worker's own command line.
  app->prefix_command();
  return {app, [options, app] {
            for (const std::string& arg : app->remaining()) {
              if (arg != "--" || !options->args.empty()) options->args.push_back(arg);
            }
            return run_zygote_run_command(*options);
          }};
}

}  // namespace kgym::app
