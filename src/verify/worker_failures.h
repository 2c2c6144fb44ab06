#pragma once
// How a worker's failure becomes a verdict (internal to verify/): a
// channel that timed out or closed, or an error reply. Pure: the caller
// kills a worker that timed out and writes the log line returned with the
// failure. Who failed decides as much as how: the reference's failures are
// the problem's (reference_error), the candidate's are the candidate's.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "verify/failure.h"
#include "verify/role.h"
#include "worker/protocol.h"
#include "worker/worker_process.h"

namespace kgym::verify::detail {

// What a failure's words depend on besides the failure itself.
struct FailureContext {
  std::chrono::seconds timeout{0};       // verifier.timeout
  std::chrono::seconds call_timeout{0};  // verifier.call_timeout
  // The candidate runs under bwrap or unshare, which report a child killed
  // by signal N as exit 128+N.
  bool candidate_boxed = false;
  long long address_space_mb = 0;       // the candidate's RLIMIT_AS (0: none)
  std::optional<ProblemSizes> sizes;     // what the problem ran at, for a memory death
};

struct WorkerFailure {
  Failure failure;
  std::string log_line;  // what the verification log says of it
};

// The channel to `role` failed while `what`; `overall_deadline`: the
// deadline that passed was the verification's, not the call's.
WorkerFailure channel_failure(Role role, const worker::ChannelError& error, std::string_view what,
                              bool overall_deadline, const FailureContext& context);

// `role` answered `reply` (ok: false) while `what`.
WorkerFailure reply_failure(Role role, const worker::Message& reply, std::string_view what);

}  // namespace kgym::verify::detail
