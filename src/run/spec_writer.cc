#include "run/spec_writer.h"
#include "core/backend.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kgym::run {

namespace {

// agent.self_check (docs/agents.md "A check in the box").
constexpr const char* kSelfCheckSection =
    "\n## Checking your candidate\n\n"
    "`kgym-check [FILE]` (on your PATH; FILE defaults to `model_new.py`) checks a candidate the way the\n"
    "verification begins: the static rules of this backend, the build, and the correctness trials on\n"
    "the problem's own inputs and on one signed normal draw, at the sizes above, with the tolerances\n"
    "above. It prints `ok (...)` or the verdict it would reach with its reason (`static.no_kernel — ...`,\n"
    "`compile_error — ...`, `fail_correctness — trial 1 ...`) and a log to read. It runs with your\n"
    "rights and is never the verdict: timing and held-out shapes are checked at verification.\n";

std::string describe(const worker::TensorInfo& t) {
  if (t.kind == "tensor") return fmt::format("tensor | {} | [{}]", t.dtype, fmt::join(t.shape, ", "));
  return fmt::format("{} | - | {}", t.kind, t.repr);
}

std::string table(const std::vector<worker::TensorInfo>& items) {
  if (items.empty()) return "(none)\n";
  std::string out = "| # | kind | dtype | shape / value |\n|---|---|---|---|\n";
  for (std::size_t i = 0; i < items.size(); ++i) out += fmt::format("| {} | {} |\n", i, describe(items[i]));
  return out;
}

}  // namespace

std::string render_spec(const Case& c, const Config& config, const worker::ProbeResult& probe) {
  std::string out = fmt::format("# {}\n\n", c.id());
  out += fmt::format(
      "Write `{}` in your work directory. It must define `class ModelNew(torch.nn.Module)`, a faster\n"
      "drop-in replacement for `Model` in `task_desc.py`: the harness calls\n"
      "`ModelNew(*get_init_inputs())(*get_inputs())` and compares the result with\n"
      "`Model(*get_init_inputs())(*get_inputs())`.\n\n",
      config.agent.artifacts.empty() ? "model_new.py" : config.agent.artifacts.front());
  out +=
      "- Same constructor arguments and the same `forward` signature as `Model`.\n"
      "- Parameters and buffers with the same names and shapes as `Model`'s: the harness loads\n"
      "  `Model`'s `state_dict` into `ModelNew` before comparing.\n"
      "- Do not import `task_desc.py`; the candidate runs in its own process without it.\n\n";
  out += "## Inputs (`get_inputs()`)\n\n" + table(probe.inputs) + "\n";
  out += "## Outputs (`forward`)\n\n" + table(probe.outputs) + "\n";
  out += "## Constructor arguments (`get_init_inputs()`)\n\n" + table(probe.init_inputs) + "\n";
  if (!probe.parameters.empty()) {
    out += "## Parameters (`state_dict`)\n\n";
    for (const std::string& p : probe.parameters) out += fmt::format("- `{}`\n", p);
    out += "\n";
  }
  if (!probe.constants.empty()) {
    out += "## Size constants (as verified)\n\n";
    for (const auto& [name, value] : probe.constants) out += fmt::format("- `{} = {}`\n", name, value);
    out += "\nYour kernel must work for other sizes too: do not hard-code them.\n\n";
  }
  if (config.precision != "as_written") {
    out += fmt::format(
        "## Precision\n\nThe problem runs in {0}: its floating inputs and `Model`'s floating parameters and "
        "buffers\nare cast to {0} (integer and bool tensors are not), `ModelNew` is cast alike before it "
        "loads\n"
        "`Model`'s state, and outputs are compared with the {0} tolerance below.\n\n",
        config.precision);
  }
  if (probe.sizes && !probe.sizes->sizes.empty()) {
    out += "## Problem sizes\n\n";
    out +=
        "`task_desc.py` states the problem at its written sizes; it is verified and timed at smaller\n"
        "ones (`problem.size: auto`), the size constants above:\n\n| constant | verified | as written |\n"
        "|---|---|---|\n";
    for (const auto& [name, value] : probe.sizes->sizes) {
      auto original = probe.sizes->original.find(name);
      out += fmt::format("| `{}` | {} | {} |\n", name, value,
                         original != probe.sizes->original.end() ? std::to_string(original->second) : "?");
    }
    out += "\n";
  }
  out += "## Correctness\n\n";
  out += fmt::format(
      "Compared on {} trials with fresh random inputs. Shapes and dtypes must match exactly; each\n"
      "element must satisfy `|out - ref| <= atol + rtol * |ref|`:\n\n| dtype | atol | rtol "
      "|\n|---|---|---|\n",
      config.verifier.trials);
  const Backend& backend = backend_of(config.verifier);
  std::vector<std::string> dtypes;
  for (const auto& t : probe.outputs) {
    if (t.kind == "tensor" && std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end())
      dtypes.push_back(t.dtype);
  }
  for (const std::string& dtype : dtypes) {
    Tolerance tol = tolerance_for(config.verifier.tolerances, dtype, backend);
    out += fmt::format("| {} | {:g} | {:g} |\n", dtype, tol.atol, tol.rtol);
  }
  out += fmt::format("\n## Backend: {}\n\n{}\n\n", backend.name, backend.spec_rules);
  if (config.verifier.mode == "performance") {
    out += fmt::format(
        "## Performance\n\nReference and candidate are timed the same way, alternately; the score is the\n"
        "speedup (reference time / candidate time). One reference forward took {:.3f} ms when probed.\n",
        probe.forward_ms);
  }
  if (config.agent.self_check) out += kSelfCheckSection;
  if (config.agent.feedback.on()) {
    out += fmt::format(
        "\n## Rounds\n\nYou may get up to {} rounds: when a candidate falls short ({}), you are prompted "
        "again in\n"
        "this directory with what its verification found. Each round's candidate is verified from scratch.\n",
        config.agent.feedback.rounds,
        config.agent.feedback.until == "pass"
            ? "it does not pass"
            : fmt::format("it does not pass as {}", config.agent.feedback.until));
  }
  return out;
}

std::string render_prompt(const Case& c, const Config& config) {
  std::string artifact = config.agent.artifacts.empty() ? "model_new.py" : config.agent.artifacts.front();
  return fmt::format(
             "You are optimizing one compute kernel ({}).\n\n"
             "Read `SPEC.md` (the contract) and `task_desc.py` (the PyTorch reference `Model`) in this\n"
             "directory. Write `{}` defining `ModelNew`, implemented with your own {} kernel, as fast as\n"
             "you can make it while staying correct. Work only inside this directory.\n",
             c.id(), artifact, config.verifier.backend) +
         (config.agent.self_check ? fmt::format("Before you finish, run `kgym-check {}` (on your PATH): it "
                                                "says what the verifier would.\n",
                                                artifact)
                                  : std::string());
}

}  // namespace kgym::run
