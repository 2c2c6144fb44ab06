// The four workers of a verification (worker_set.h).
#include "verify/worker_set.h"

namespace kgym::verify::detail {

std::expected<worker::Message, Failure> WorkerSet::receive(Role role, std::string_view what,
                                                           worker::Deadline deadline) {
  auto reply = at(role).receive(deadline);
  if (!reply) return std::unexpected(channel_failure(role, reply.error(), what, deadline >= deadline_));
  if (!reply->header.value("ok", false)) {
    WorkerFailure failed = reply_failure(role, *reply, what);
    note_(failed.log_line);
    return std::unexpected(std::move(failed.failure));
  }
  return std::move(*reply);
}

std::expected<worker::Message, Failure> WorkerSet::call(Role role, const worker::Message& request,
                                                        std::string_view what, bool bounded_by_call_timeout) {
  worker::Deadline deadline = bounded_by_call_timeout ? call_deadline() : deadline_;
  if (auto sent = at(role).send(request, deadline); !sent)
    return std::unexpected(channel_failure(role, sent.error(), what, deadline >= deadline_));
  return receive(role, what, deadline);
}

std::vector<pid_t> WorkerSet::pids() const {
  std::vector<pid_t> pids;
  for (const auto& w : workers_)
    if (w) pids.push_back(w->pid());
  return pids;
}

void WorkerSet::shutdown(std::chrono::seconds grace) {
  for (auto& w : workers_)
    if (w) w->shutdown(worker::Clock::now() + grace);
}

Failure WorkerSet::channel_failure(Role role, const worker::ChannelError& error, std::string_view what,
                                   bool overall_deadline) {
  if (error.kind == worker::ChannelError::Kind::kTimeout) at(role).kill();
  WorkerFailure failed = detail::channel_failure(role, error, what, overall_deadline, context_());
  note_(failed.log_line);
  return std::move(failed.failure);
}

}  // namespace kgym::verify::detail
