#include "worker/worker_startup.h"

#include <chrono>

namespace kgym::worker {
namespace {

// Stamps taken on two sides of a process boundary may disagree by the
// clock's granularity; anything earlier than this is another clock.
constexpr long long kSlackNs = 1'000'000;

double seconds(long long ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

long long monotonic_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::optional<WorkerStartup> worker_startup(const nlohmann::json& hello, Clock::time_point requested) {
  auto started = hello.find("started_ns");
  auto ready = hello.find("ready_ns");
  if (started == hello.end() || ready == hello.end() || !started->is_number_integer() ||
      !ready->is_number_integer()) {
    return std::nullopt;
  }
  long long asked = monotonic_ns(requested);
  long long began = started->get<long long>();
  long long done = ready->get<long long>();
  if (began + kSlackNs < asked || done < began) return std::nullopt;
  return WorkerStartup{.launch_s = seconds(std::max(0LL, began - asked)), .init_s = seconds(done - began)};
}

}  // namespace kgym::worker
