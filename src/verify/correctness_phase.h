#pragma once
// The correctness phase of a verification (internal to verify/): the trials
// on the problem's own inputs and on signed normal values, the reference
// run twice on trial 0's inputs (it must match itself), the candidate run
// twice on them (determinism), the runtime checks of every candidate reply,
// and a trial at each extra shape. Like the TimingSession it talks to the
// workers only through the exchange it is given, starts no process, and
// reads no clock: the verification owns the workers and hands it `call`;
// the tests hand it scripted workers (correctness_phase_test.cc).
//
// What it decides, it decides from the replies' bytes in this process: the
// outputs are compared here (output_match.h), never by a worker.
#include <cstdint>
#include <expected>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/backend.h"
#include "core/config.h"
#include "core/result.h"
#include "verify/failure.h"
#include "verify/output_match.h"
#include "verify/role.h"
#include "verify/tensor_compare.h"
#include "worker/protocol.h"

namespace kgym::verify::detail {

// Extra trials whose floating inputs are signed standard normal values.
constexpr int kSignedNormalTrials = 2;

// Seeds the workers take through torch.manual_seed (63 bits).
std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t stream);

// One request to one side and its successful reply; every other outcome
// (an error reply, a timeout, a death, bad bytes) is the Failure it means.
using CorrectnessCall =
    std::function<std::expected<worker::Message, Failure>(Role side, const worker::Message&, std::string_view what)>;

struct CorrectnessSetup {
  const VerifierConfig* config = nullptr;  // trials, tolerances, mode, backend
  std::uint64_t run_seed = 0;              // the trials' seeds follow from it
  bool op_trace = true;                    // the candidate's calls run under the op trace
  // A null or missing trace is a finding: the reference's worker traces on
  // this torch and the candidate slot does not run the reference itself.
  bool trace_expected = false;
  // kgym-check (VerifyRequest::self_check): one trial on get_inputs() and
  // one on signed normal values.
  bool quick = false;
};

class CorrectnessPhase {
 public:
  CorrectnessPhase(CorrectnessSetup setup, CorrectnessCall call, std::function<void(const std::string&)> note,
                   CaseResult& result)
      : setup_(setup), call_(std::move(call)), note_(std::move(note)), result_(result) {}

  // The trials at the shape loaded (the problem's own): max(3, trials) on
  // its get_inputs(), then kSignedNormalTrials on signed normal values.
  std::expected<void, Failure> run_trials();
  // One trial on the problem's own inputs at the shape loaded last (an extra
  // shape; `label` names it in the record).
  std::expected<void, Failure> shape_trial(const std::string& label);
  // The reference's trial under `seed`: its reply holds the inputs, then
  // one payload per output.
  std::expected<worker::Message, Failure> reference_trial(std::uint64_t seed, std::string_view distribution,
                                                          std::string_view what);
  // A runtime finding as the Failure it is (noted in the log).
  Failure runtime_cheat(CheatFinding finding, std::string_view where);

 private:
  std::expected<worker::Message, Failure> candidate_trial(const std::string& inputs,
                                                          const nlohmann::json& reference_facts,
                                                          std::string_view what);
  std::expected<void, Failure> compare_outputs(int trial, std::span<const TensorBytes> candidate,
                                               std::span<const TensorBytes> reference);
  std::expected<void, Failure> check_reference_consistency(const std::string& inputs,
                                                           std::span<const TensorBytes> first);
  std::expected<void, Failure> check_determinism(const std::string& inputs, const nlohmann::json& reference_facts,
                                                 std::span<const TensorBytes> first,
                                                 std::span<const TensorBytes> reference);
  OutputRules output_rules() const;

  CorrectnessSetup setup_;
  CorrectnessCall call_;
  std::function<void(const std::string&)> note_;
  CaseResult& result_;
};

}  // namespace kgym::verify::detail
