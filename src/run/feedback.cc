#include "run/feedback.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "report/format.h"

namespace kgym::run {
namespace {

// p of "fast_p"; 0 for "pass".
double threshold(std::string_view until) {
  if (until == "fast_1") return 1.0;
  if (until == "fast_2") return 2.0;
  return 0.0;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string goal(std::string_view until) {
  if (until == "pass") return "passes verification";
  return fmt::format(
      "passes and is faster than the reference by more than {}× with confidence (the lower end of its "
      "speedup's "
      "95 % interval above {}×)",
      threshold(until), threshold(until));
}

std::string interval_text(const std::optional<Interval>& ci) {
  if (!ci) return "";
  return fmt::format(" (95 % interval {}–{})", report::format_speedup(ci->lo),
                     report::format_speedup(ci->hi));
}

}  // namespace

bool meets(const CaseResult& result, std::string_view until) {
  if (result.verdict != Verdict::kPass) return false;
  double p = threshold(until);
  if (p == 0.0) return true;
  if (!result.performance) return false;
  const SpeedupEstimate& s = result.performance->speedup;
  return s.ci95 && s.ci95->lo > p;
}

bool worth_another_round(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
    case Verdict::kFailCorrectness:
    case Verdict::kCompileError:
    case Verdict::kRuntimeError:
    case Verdict::kTimeout:
    case Verdict::kCrash:
    case Verdict::kGenerationFailed: return true;
    case Verdict::kFailCheat:
    case Verdict::kReferenceError:
    case Verdict::kDeviceUnavailable:
    case Verdict::kHarnessError: return false;
  }
  return false;
}

RoundRecord round_record(const CaseResult& result, int round) {
  RoundRecord r;
  r.round = round;
  r.verdict = result.verdict;
  r.reason = result.reason;
  if (result.verdict == Verdict::kPass && result.performance) {
    r.speedup = result.performance->speedup.median;
    r.speedup_ci95 = result.performance->speedup.ci95;
  }
  if (const auto& g = result.generation) {
    if (g->tokens_in || g->tokens_out) r.tokens = g->tokens_in.value_or(0) + g->tokens_out.value_or(0);
    r.cost = g->cost;
  }
  r.wall_s = result.timings.total_s;
  return r;
}

std::string compiler_errors(std::string_view build_log, int max_lines) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < build_log.size();) {
    std::size_t end = build_log.find('\n', at);
    if (end == std::string_view::npos) end = build_log.size();
    lines.push_back(build_log.substr(at, end - at));
    at = end + 1;
  }
  std::string out;
  int taken = 0;
  std::size_t last_taken = std::string_view::npos;
  for (std::size_t i = 0; i < lines.size() && taken < max_lines; ++i) {
    std::string l = lower(lines[i]);
    if (l.find("error") == std::string::npos) continue;
    for (std::size_t k = i; k <= std::min(i + 1, lines.size() - 1) && taken < max_lines; ++k) {
      if (last_taken != std::string_view::npos && k <= last_taken) continue;
      std::string_view line = lines[k];
      out += line.size() > 300 ? fmt::format("{}…\n", line.substr(0, 300)) : fmt::format("{}\n", line);
      last_taken = k;
      ++taken;
    }
  }
  return out;
}

std::string feedback_section(const CaseResult& result, int round, const FeedbackConfig& feedback,
                             std::string_view build_log) {
  std::string out = "## Verification of your previous candidate\n\n";
  out += fmt::format("Round {} of {}: the verdict on your candidate is `{}`.\n\n", round, feedback.rounds,
                     to_string(result.verdict));
  if (!result.reason.empty()) out += fmt::format("Reason: {}\n\n", report::speedup_signs(result.reason));
  const Correctness& c = result.correctness;
  switch (result.verdict) {
    case Verdict::kCompileError: {
      std::string errors = compiler_errors(build_log);
      if (!errors.empty()) out += fmt::format("The compiler's errors (trimmed):\n\n```\n{}```\n\n", errors);
      break;
    }
    case Verdict::kFailCorrectness: {
      if (c.failed_trial) {
        std::size_t t = static_cast<std::size_t>(*c.failed_trial);
        std::string inputs = t < c.distributions.size() ? c.distributions[t] : "";
        out += fmt::format("The trial that failed: trial {}{}", *c.failed_trial,
                           inputs.empty() ? "" : fmt::format(" ({} inputs)", inputs));
        if (!c.shapes.empty()) out += fmt::format(", input shapes {}", c.shapes.back());
        out += ".\n";
      }
      if (c.failed_output) out += fmt::format("The output that differs: output {}.\n", *c.failed_output);
      if (c.max_abs_err || c.max_rel_err) {
        out += fmt::format("Largest errors seen: absolute {}, relative {}.\n",
                           c.max_abs_err ? fmt::format("{:.4g}", *c.max_abs_err) : "—",
                           c.max_rel_err ? fmt::format("{:.4g}", *c.max_rel_err) : "—");
      }
      for (const auto& o : c.outputs) {
        out += fmt::format("Output compared as {} with atol {:g}, rtol {:g}.\n", o.dtype, o.atol, o.rtol);
      }
      out += "\n";
      break;
    }
    case Verdict::kPass: {
      if (const auto& p = result.performance) {
        out +=
            fmt::format("Speedup over the PyTorch reference: {}{}; the reference takes {} ms, yours {} ms.\n",
                        report::format_speedup(p->speedup.median), interval_text(p->speedup.ci95),
                        report::format_ms(p->reference.median_ms), report::format_ms(p->candidate.median_ms));
        for (const BaselineSpeedup& b : p->speedup_vs) {
          if (b.speedup)
            out += fmt::format("Against the reference through torch.{}: {}{}.\n", b.name,
                               report::format_speedup(b.speedup->median), interval_text(b.speedup->ci95));
        }
        out += "\n";
      }
      break;
    }
    default: break;
  }
  int left = feedback.rounds - round;
  out += fmt::format(
      "The rounds end when a candidate {}. {} round{} left, this one included. Write your next candidate "
      "where "
      "you wrote this one; it is built and verified again from scratch, with inputs, trials and held-out "
      "shapes "
      "of its own.\n",
      goal(feedback.until), left, left == 1 ? " is" : "s are");
  return out;
}

}  // namespace kgym::run
