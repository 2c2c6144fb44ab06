#pragma once
// Refinement rounds (agent.feedback, docs/agents.md "Refinement rounds"):
// whether a round's result ends the sample, and what the agent is told of
// it in the next round's prompt. Pure: the flow hands in the result and
// the build's log. The feedback says what a user of kgym sees of a
// verification — the verdict, its reason, the compiler's errors, the
// failing trial with its shapes and values, the speedup and its interval —
// and never how the verification chose what it checked: no seed, no timed
// input, no word of which calls were checked or traced.
#include <string>
#include <string_view>

#include "core/config.h"
#include "core/result.h"

namespace kgym::run {

// The result meets feedback.until: a pass, and for fast_p a speedup whose
// 95 % interval lies above p — fast_p's `count` in summary.json.
bool meets(const CaseResult& result, std::string_view until);

// Another round may change this outcome: a wrong, broken, slow or missing
// candidate. A cheat ends the sample (its verdict stands, whatever came
// after), and so does anything that is not the candidate's doing (the
// reference, the device, kgym itself).
bool worth_another_round(Verdict verdict);

// The round this result ends is `round` of `feedback.rounds`.
RoundRecord round_record(const CaseResult& result, int round);

// The "## Verification of your previous candidate" section of the next
// round's prompt; `build_log` is the build stage's log of that candidate
// (its compiler errors are quoted, trimmed).
std::string feedback_section(const CaseResult& result, int round, const FeedbackConfig& feedback,
                             std::string_view build_log);

// The compiler's error lines of a build log: the lines that say error, with
// the line after each, at most `max_lines`, each cut to 300 characters.
std::string compiler_errors(std::string_view build_log, int max_lines = 30);

}  // namespace kgym::run
