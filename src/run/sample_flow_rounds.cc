// Refinement rounds (agent.feedback, docs/agents.md "Refinement rounds"):
// when a round's verification falls short of `until` and rounds remain,
// the same agent continues in the same workspace with the verification's
// feedback, and its new candidate goes through the whole pipeline again
// (static gate, build, verification) under seeds of its own. rounds.json
// keeps the finished rounds, so that a resume runs again only the round
// the sample was in.
#include <fmt/format.h>

#include "agent/template.h"
#include "run/feedback.h"
#include "run/sample_flow.h"
#include "util/fs.h"
#include "util/json_optional.h"
#include "util/json_text.h"
#include "util/seed_mix.h"

namespace kgym::run {
namespace {

template <typename T>
std::optional<T> sum_of(std::optional<T> a, std::optional<T> b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

}  // namespace

// Round 1 verifies under the sample's seed, a later round under one of its
// own: what the feedback showed of a round (a failing trial, a held-out
// shape) is not what the next one checks.
std::uint64_t SampleFlow::verify_seed() const {
  if (round_ == 1) return id_.seed;
  return util::splitmix64(id_.seed ^ util::fnv1a(fmt::format("refinement round {}", round_)));
}

bool SampleFlow::another_round(const CaseResult& result) const {
  const FeedbackConfig& feedback = config_.agent.feedback;
  return round_ < feedback.rounds && worth_another_round(result.verdict) && !meets(result, feedback.until);
}

// The round ends short of `until`: its record and the feedback are kept
// (rounds.json) before the agent continues.
Step SampleFlow::next_round(const CaseResult& result) {
  rounds_.push_back(round_record(result, round_));
  std::string build_log;
  if (result.verdict == Verdict::kCompileError)
    build_log = util::read_file(id_.paths.build_log()).value_or("");
  feedback_ = feedback_section(result, round_, config_.agent.feedback, build_log);
  if (const auto& g = result.generation) {
    spent_.tokens_in = sum_of(spent_.tokens_in, g->tokens_in);
    spent_.tokens_out = sum_of(spent_.tokens_out, g->tokens_out);
    spent_.tool_calls = sum_of(spent_.tool_calls, g->tool_calls);
    spent_.cost = sum_of(spent_.cost, g->cost);
    if (round_ == 1) spent_.prompt_sha256 = g->prompt_sha256;
  }
  spent_.generate_s += generate_s_.value_or(0);
  event("round", {{"round", round_},
                  {"verdict", to_string(result.verdict)},
                  {"speedup", util::optional_json(rounds_.back().speedup)},
                  {"next", round_ + 1}});
  ++round_;
  // The finished round's agent is accounted for in spent_.
  generation_ = Generation{};
  generation_.agent = agent_.name();
  if (auto ok = write_rounds(); !ok)
    return fail(Verdict::kHarnessError, fmt::format("cannot keep the finished rounds: {}", ok.error()));
  // The round's candidate was verified; the next one is generated again.
  std::error_code ec;
  std::filesystem::remove(id_.paths.generation(), ec);
  candidate_.clear();
  // The device was leased for the verification; the next round's agent
  // keeps it only when it holds one through generation (agent.needs_device).
  if (!config_.agent.needs_device) device_.reset();
  compile_s_.reset();
  generate_s_.reset();
  round_started_ = clock_.now();
  return launch_generation();
}

// The agent of a round after the first: the same agent, the same
// workspace, the round's prompt followed by the feedback. A workflow runs
// its last stage again, with its checks (launch_stage adds the feedback).
Step SampleFlow::launch_feedback_round() {
  event("round_started", {{"round", round_}});
  if (!config_.workflow.stages.empty()) {
    workflow_stage_ = config_.workflow.stages.size() - 1;
    attempt_ = 0;
    return launch_stage();
  }
  std::string text;
  if (const auto& prompt = config_.agent.feedback.prompt) {
    auto read = util::read_file(*prompt);
    if (!read) return fail(Verdict::kHarnessError, read.error());
    auto values = agent::placeholders(agent_task(id_.work / CasePaths::kPrompt), config_.agent);
    text = agent::expand_template(*read, values);
  } else {
    // kgym's own copy of the prompt, not the work dir's, which is the agent's.
    auto read = util::read_file(id_.paths.prompt());
    if (!read) return fail(Verdict::kHarnessError, read.error());
    text = std::move(*read);
  }
  auto file = write_prompt(fmt::format("round.{}.md", round_), text + "\n\n" + feedback_);
  if (!file) return fail(Verdict::kHarnessError, file.error());
  return launch_agent(*file);
}

// The sample's last round: its result carries every round, and what the
// agents of all rounds spent.
void SampleFlow::end_rounds(CaseResult& result) const {
  std::vector<RoundRecord> rounds = rounds_;
  rounds.push_back(round_record(result, round_));
  result.rounds = std::move(rounds);
  if (rounds_.empty()) return;
  if (result.generation) {
    Generation& g = *result.generation;
    g.tokens_in = sum_of(spent_.tokens_in, g.tokens_in);
    g.tokens_out = sum_of(spent_.tokens_out, g.tokens_out);
    g.tool_calls = sum_of(spent_.tool_calls, g.tool_calls);
    g.cost = sum_of(spent_.cost, g.cost);
    if (spent_.prompt_sha256) g.prompt_sha256 = spent_.prompt_sha256;
    g.duration_s = spent_.generate_s + g.duration_s.value_or(0);
  }
  result.timings.generate_s = spent_.generate_s + result.timings.generate_s.value_or(0);
}

std::expected<void, std::string> SampleFlow::write_rounds() const {
  nlohmann::json j = {{"round", round_},
                      {"rounds", rounds_json(rounds_)},
                      {"feedback", feedback_},
                      {"spent",
                       {{"tokens_in", util::optional_json(spent_.tokens_in)},
                        {"tokens_out", util::optional_json(spent_.tokens_out)},
                        {"tool_calls", util::optional_json(spent_.tool_calls)},
                        {"cost", util::optional_json(spent_.cost)},
                        {"generate_s", spent_.generate_s},
                        {"prompt_sha256", util::optional_json(spent_.prompt_sha256)}}}};
  return util::write_file_atomic(id_.paths.rounds(), util::json_text(j, 2) + "\n");
}

// rounds.json of a previous attempt: the sample goes on in the round it was
// in. An unreadable one is taken as none (the sample starts from round 1).
void SampleFlow::read_rounds() {
  auto text = util::read_file(id_.paths.rounds());
  if (!text) return;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  try {
    std::vector<RoundRecord> rounds = rounds_from_json(j.at("rounds"));
    int round = j.at("round").get<int>();
    if (round != static_cast<int>(rounds.size()) + 1) return;
    const nlohmann::json& spent = j.at("spent");
    Spent read;
    read.tokens_in = util::optional_at<std::int64_t>(spent, "tokens_in");
    read.tokens_out = util::optional_at<std::int64_t>(spent, "tokens_out");
    read.tool_calls = util::optional_at<std::int64_t>(spent, "tool_calls");
    read.cost = util::optional_at<double>(spent, "cost");
    read.generate_s = spent.value("generate_s", 0.0);
    read.prompt_sha256 = util::optional_at<std::string>(spent, "prompt_sha256");
    feedback_ = j.at("feedback").get<std::string>();
    rounds_ = std::move(rounds);
    round_ = round;
    spent_ = std::move(read);
  } catch (const nlohmann::json::exception&) {
  }
}

}  // namespace kgym::run
