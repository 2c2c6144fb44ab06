// How a worker's failure becomes a verdict (worker_failures.h).
#include "verify/worker_failures.h"

#include <csignal>

#include <fmt/format.h>

#include "worker/child_process.h"

namespace kgym::verify::detail {

namespace {

WorkerFailure cheat(CheatFinding finding, std::string_view what) {
  Failure failure = runtime_cheat_failure(std::move(finding), what);
  std::string line = "runtime finding: " + failure.reason;
  return {std::move(failure), std::move(line)};
}

}  // namespace

WorkerFailure channel_failure(Role role, const worker::ChannelError& error, std::string_view what,
                              bool overall_deadline, const FailureContext& context) {
  auto side = role_name(role);
  std::string line = fmt::format("{} channel failure while {}: {}", side, what, error.message);
  auto made = [&](Verdict verdict, std::string reason) { return WorkerFailure{{verdict, std::move(reason)}, line}; };
  switch (error.kind) {
    case worker::ChannelError::Kind::kTimeout: {
      if (overall_deadline) {
        return made(Verdict::kTimeout, fmt::format("verification exceeded verifier.timeout ({} s) while {} ({})",
                                                   context.timeout.count(), what, side));
      }
      std::string reason = fmt::format("{} did not answer within verifier.call_timeout ({} s) while {}", side,
                                       context.call_timeout.count(), what);
      return made(is_candidate(role) ? Verdict::kTimeout : Verdict::kReferenceError, reason);
    }
    case worker::ChannelError::Kind::kExited: {
      std::optional<worker::ChildExit> exit = error.exit;
      if (is_candidate(role) && context.candidate_boxed && exit && !exit->signaled && exit->code > 128 &&
          exit->code < 128 + 65) {
        exit->signaled = true;
        exit->code -= 128;
      }
      std::string how = exit ? exit->describe() : "unknown status";
      // SIGKILL that kgym did not send: the kernel's out-of-memory killer.
      if (exit && exit->signaled && exit->code == SIGKILL) {
        std::string sizes = context.sizes ? "The problem ran at " + describe_sizes(*context.sizes) : "";
        std::string reason = fmt::format(
            "{} while {}",
            worker::memory_reason(fmt::format("the {} worker", side), *exit,
                                  is_candidate(role) ? context.address_space_mb : 0, sizes),
            what);
        return made(is_candidate(role) ? Verdict::kCrash : Verdict::kReferenceError, reason);
      }
      if (!is_candidate(role))
        return made(Verdict::kReferenceError, fmt::format("{} worker ended ({}) while {}", side, how, what));
      if (exit && exit->signaled && exit->code == SIGSYS) {
        // The candidate worker's seccomp filter (boxed/kgym_worker_lease.py)
        // kills a process that asks to change its CPU affinity.
        WorkerFailure found = cheat(CheatFinding{"runtime.lease", "runtime",
                                                 "the candidate's process was killed by SIGSYS: it called "
                                                 "sched_setaffinity, which the lease forbids (its cores are fixed)"},
                                    what);
        found.log_line = line + "\n" + found.log_line;
        return found;
      }
      if (exit && exit->signaled)
        return made(Verdict::kCrash, fmt::format("candidate worker killed by {} while {}", how, what));
      return made(Verdict::kRuntimeError, fmt::format("candidate worker exited ({}) while {}", how, what));
    }
    case worker::ChannelError::Kind::kProtocol:
    case worker::ChannelError::Kind::kIo:
      return made(Verdict::kHarnessError,
                  fmt::format("{} worker protocol error while {}: {}", side, what, error.message));
  }
  return made(Verdict::kHarnessError, error.message);
}

WorkerFailure reply_failure(Role role, const worker::Message& reply, std::string_view what) {
  std::string kind = reply.header.value("error_kind", "");
  std::string error = reply.header.value("error", "unknown error");
  std::string line = fmt::format("{} failed while {} ({}): {}\n{}", role_name(role), what, kind, error,
                                 reply.header.value("detail", ""));
  auto made = [&](Verdict verdict, std::string reason) {
    WorkerFailure f{{verdict, std::move(reason)}, line};
    f.failure.worker_answered = true;
    return f;
  };
  if (kind == "protocol" || kind == "unsupported" || kind == "usage") {
    return made(kind == "usage" ? Verdict::kReferenceError : Verdict::kHarnessError,
                fmt::format("{} worker: {}", role_name(role), error));
  }
  if (!is_candidate(role)) return made(Verdict::kReferenceError, fmt::format("{} {}: {}", role_name(role), what, error));
  if (kind == "cheat") {
    std::string rule = reply.header.contains("rule") && reply.header["rule"].is_string()
                           ? reply.header["rule"].get<std::string>()
                           : "runtime.escape";
    WorkerFailure found = cheat(CheatFinding{rule, "runtime", error}, what);
    found.log_line = line + "\n" + found.log_line;
    found.failure.worker_answered = true;
    return found;
  }
  if (kind == "compile") return made(Verdict::kCompileError, "candidate failed to compile: " + error);
  if (kind == "import") return made(Verdict::kCompileError, "candidate failed to import: " + error);
  if (kind == "unbuilt") return made(Verdict::kCompileError, error);
  if (kind == "missing") return made(Verdict::kRuntimeError, error);
  return made(Verdict::kRuntimeError, fmt::format("candidate raised while {}: {}", what, error));
}

}  // namespace kgym::verify::detail
