#pragma once
// Time is injected: code that measures durations or waits with deadlines
// takes a Clock&. The wall clock only stamps records (unix_now()).
#include <chrono>
#include <string>

namespace kgym::util {

using SteadyTime = std::chrono::steady_clock::time_point;
using Seconds = std::chrono::duration<double>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
 public:
  SteadyTime now() const override { return now_; }
  void advance(std::chrono::steady_clock::duration d) { now_ += d; }

 private:
  SteadyTime now_{std::chrono::seconds(1000)};
};

// Wall-clock seconds since the UNIX epoch, for stamping reports only.
double unix_now();

// ISO-8601 UTC ("2026-11-29T18:15:46Z") of a unix time.
std::string iso8601_utc(double unix_seconds);

}  // namespace kgym::util
