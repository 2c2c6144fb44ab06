#pragma once
// The four workers of a verification. The twins: a second worker of each
// side, the same code, weights and inputs in another process, started when
// timing begins and timed for the noise floors (two processes of one
// program differ; verify/timing_session.h). A candidate twin runs the
// candidate's code, boxed alike, and fails like the candidate.
#include <string_view>

namespace kgym::verify {

enum class Role { kReference, kCandidate, kTwin, kCandidateTwin };

inline std::string_view role_name(Role role) {
  switch (role) {
    case Role::kReference: return "reference";
    case Role::kCandidate: return "candidate";
    case Role::kTwin: return "reference_twin";
    case Role::kCandidateTwin: return "candidate_twin";
  }
  return "?";
}

inline bool is_candidate(Role role) { return role == Role::kCandidate || role == Role::kCandidateTwin; }

}  // namespace kgym::verify
