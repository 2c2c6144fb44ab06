#include "verify/worker_failures.h"

#include <csignal>

#include <gtest/gtest.h>

namespace kgym::verify::detail {
namespace {

using worker::ChannelError;
using worker::ChildExit;

FailureContext context() {
  return {.timeout = std::chrono::seconds(300), .call_timeout = std::chrono::seconds(10), .address_space_mb = 4096};
}

ChannelError exited(ChildExit exit) { return {ChannelError::Kind::kExited, "closed", exit}; }

TEST(WorkerFailures, ATimeoutIsTheCandidatesOrTheProblemsAndNamesWhichDeadline) {
  ChannelError timeout{ChannelError::Kind::kTimeout, "deadline"};
  auto call = channel_failure(Role::kCandidate, timeout, "trial 2", false, context());
  EXPECT_EQ(call.failure.verdict, Verdict::kTimeout);
  EXPECT_EQ(call.failure.reason, "candidate did not answer within verifier.call_timeout (10 s) while trial 2");
  EXPECT_NE(call.log_line.find("candidate channel failure while trial 2"), std::string::npos);
  EXPECT_EQ(channel_failure(Role::kReference, timeout, "trial 2", false, context()).failure.verdict,
            Verdict::kReferenceError);
  auto overall = channel_failure(Role::kReference, timeout, "timing", true, context());
  EXPECT_EQ(overall.failure.verdict, Verdict::kTimeout);
  EXPECT_NE(overall.failure.reason.find("verifier.timeout (300 s)"), std::string::npos);
}

TEST(WorkerFailures, ABoxedCandidateExitingWith128PlusNWasKilledBySignalN) {
  FailureContext boxed = context();
  boxed.candidate_boxed = true;
  auto segv = channel_failure(Role::kCandidate, exited({.code = 128 + SIGSEGV}), "trial 0", false, boxed);
  EXPECT_EQ(segv.failure.verdict, Verdict::kCrash);
  EXPECT_NE(segv.failure.reason.find("SIGSEGV"), std::string::npos) << segv.failure.reason;
  // Unboxed, an exit code is an exit code.
  auto plain = channel_failure(Role::kCandidate, exited({.code = 128 + SIGSEGV}), "trial 0", false, context());
  EXPECT_EQ(plain.failure.verdict, Verdict::kRuntimeError);
}

TEST(WorkerFailures, AKillTheHarnessDidNotSendSpeaksOfMemory) {
  auto killed = channel_failure(Role::kCandidate, exited({.signaled = true, .code = SIGKILL}), "timing", false,
                                context());
  EXPECT_EQ(killed.failure.verdict, Verdict::kCrash);
  EXPECT_NE(killed.failure.reason.find("memory"), std::string::npos) << killed.failure.reason;
  EXPECT_EQ(channel_failure(Role::kTwin, exited({.signaled = true, .code = SIGKILL}), "timing", false, context())
                .failure.verdict,
            Verdict::kReferenceError);
}

TEST(WorkerFailures, SigsysIsTheLeasesSeccompFilterAndACheat) {
  auto sys = channel_failure(Role::kCandidateTwin, exited({.signaled = true, .code = SIGSYS}), "timing", false,
                             context());
  EXPECT_EQ(sys.failure.verdict, Verdict::kFailCheat);
  ASSERT_TRUE(sys.failure.cheat);
  EXPECT_EQ(sys.failure.cheat->rule, "runtime.lease");
  EXPECT_NE(sys.log_line.find("runtime finding: runtime.lease"), std::string::npos);
}

TEST(WorkerFailures, TheReferenceEndingIsTheProblemsFaultAndBadBytesTheHarnesss) {
  EXPECT_EQ(channel_failure(Role::kReference, exited({.code = 1}), "loading", false, context()).failure.verdict,
            Verdict::kReferenceError);
  EXPECT_EQ(channel_failure(Role::kCandidate, {ChannelError::Kind::kProtocol, "bad frame"}, "trial 0", false,
                            context())
                .failure.verdict,
            Verdict::kHarnessError);
}

worker::Message error_reply(std::string kind, std::string error, nlohmann::json extra = nlohmann::json::object()) {
  worker::Message reply;
  reply.header = {{"ok", false}, {"error_kind", std::move(kind)}, {"error", std::move(error)}};
  reply.header.update(extra);
  return reply;
}

TEST(WorkerFailures, ACandidatesErrorReplyIsItsVerdictAndWasAnswered) {
  struct Case {
    std::string kind;
    Verdict verdict;
  };
  for (const auto& [kind, verdict] : std::vector<Case>{{"compile", Verdict::kCompileError},
                                                       {"import", Verdict::kCompileError},
                                                       {"unbuilt", Verdict::kCompileError},
                                                       {"missing", Verdict::kRuntimeError},
                                                       {"exception", Verdict::kRuntimeError},
                                                       {"protocol", Verdict::kHarnessError},
                                                       {"usage", Verdict::kReferenceError}}) {
    auto f = reply_failure(Role::kCandidate, error_reply(kind, "boom"), "trial 1");
    EXPECT_EQ(f.failure.verdict, verdict) << kind;
    EXPECT_TRUE(f.failure.worker_answered) << kind;
    EXPECT_NE(f.log_line.find("candidate failed while trial 1 (" + kind + "): boom"), std::string::npos);
  }
}

TEST(WorkerFailures, ACheatReplyCarriesItsRuleAndTheReferencesErrorsAreTheProblems) {
  auto cheat = reply_failure(Role::kCandidate, error_reply("cheat", "wrote outside", {{"rule", "runtime.escape"}}),
                             "trial 0");
  EXPECT_EQ(cheat.failure.verdict, Verdict::kFailCheat);
  ASSERT_TRUE(cheat.failure.cheat);
  EXPECT_EQ(cheat.failure.cheat->rule, "runtime.escape");
  EXPECT_EQ(cheat.failure.reason, "runtime.escape — trial 0: wrote outside");
  auto unnamed = reply_failure(Role::kCandidate, error_reply("cheat", "x", {{"rule", 7}}), "trial 0");
  EXPECT_EQ(unnamed.failure.cheat->rule, "runtime.escape");  // a rule that is no string
  auto reference = reply_failure(Role::kReference, error_reply("cheat", "x"), "trial 0");
  EXPECT_EQ(reference.failure.verdict, Verdict::kReferenceError);
}

}  // namespace
}  // namespace kgym::verify::detail
