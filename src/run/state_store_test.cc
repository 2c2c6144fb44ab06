#include "run/state_store.h"

#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::run {
namespace {

using std::chrono::milliseconds;

// A write clock whose every reading is `step` after the one before, so a
// state.json write (two readings) "takes" `step`.
class SteppingClock final : public util::Clock {
 public:
  util::SteadyTime now() const override {
    util::SteadyTime t = now_;
    now_ += step;
    return t;
  }
  void advance(std::chrono::steady_clock::duration d) { now_ += d; }
  std::chrono::steady_clock::duration step{};

 private:
  mutable util::SteadyTime now_{std::chrono::seconds(1000)};
};

class StateStoreTest : public ::testing::Test {
 protected:
  std::string state_text() { return util::read_file(temp_.path() / "state.json").value_or(""); }
  std::string events_text() { return util::read_file(temp_.path() / "events.jsonl").value_or(""); }

  util::TempDir temp_{"kgym-store"};
  util::FakeClock run_clock_;
  SteppingClock write_clock_;
  StateStore store_{temp_.path(), {}, write_clock_};
};

TEST_F(StateStoreTest, WritesTheWholeStateAsDumpDoes) {
  CaseState row;
  row.id = "level1/1_A";
  store_.state().cases.push_back(row);
  store_.save();
  store_.flush(run_clock_.now());
  EXPECT_EQ(state_text(), to_json(store_.state()).dump(2) + "\n");
  store_.case_state(0).phase = "probing";
  store_.save();
  store_.flush(run_clock_.now(), /*force=*/true);
  EXPECT_EQ(state_text(), to_json(store_.state()).dump(2) + "\n");
  EXPECT_EQ(run_state_from_json(nlohmann::json::parse(state_text())).cases.at(0).phase, "probing");
}

TEST_F(StateStoreTest, EventsAreAppendedAtEveryFlushEvenWhenTheStateWaits) {
  store_.save();
  store_.flush(run_clock_.now());
  store_.event("phase", "level1/1_A", {{"phase", "probing"}});
  store_.save();
  store_.flush(run_clock_.now());  // state.json not due yet
  EXPECT_TRUE(store_.state_pending());
  EXPECT_NE(events_text().find(R"("event":"phase")"), std::string::npos);
  EXPECT_EQ(store_.write_stats().writes, 1u);
}

TEST_F(StateStoreTest, RewritesAtMostOncePerIntervalOfTheRunsClock) {
  store_.save();
  store_.flush(run_clock_.now());  // the first write is not held back
  EXPECT_EQ(store_.write_stats().writes, 1u);
  store_.save();
  run_clock_.advance(StateStore::kStateInterval - milliseconds(1));
  store_.flush(run_clock_.now());
  EXPECT_EQ(store_.write_stats().writes, 1u);
  EXPECT_EQ(store_.state_due_in(run_clock_.now()), milliseconds(1));
  run_clock_.advance(milliseconds(1));
  EXPECT_EQ(store_.state_due_in(run_clock_.now()), milliseconds(0));
  store_.flush(run_clock_.now());
  EXPECT_EQ(store_.write_stats().writes, 2u);
  EXPECT_FALSE(store_.state_pending());
}

// A write that took 50 ms is followed by none for kStateCostFactor × 50 ms
// of the write clock, however far the run's clock moved.
TEST_F(StateStoreTest, ASlowWriteSpacesTheNextOneByItsCost) {
  write_clock_.step = milliseconds(50);
  store_.save();
  store_.flush(run_clock_.now());
  write_clock_.step = {};
  EXPECT_EQ(store_.write_stats().last, milliseconds(50));
  store_.save();
  run_clock_.advance(std::chrono::seconds(10));
  // The write ended 50 ms after it began and the clock was read once more since.
  auto spacing = StateStore::kStateCostFactor * milliseconds(50);
  EXPECT_EQ(store_.state_due_in(run_clock_.now()), spacing - milliseconds(50));
  store_.flush(run_clock_.now());
  EXPECT_EQ(store_.write_stats().writes, 1u);
  write_clock_.advance(spacing - milliseconds(50));
  store_.flush(run_clock_.now());
  EXPECT_EQ(store_.write_stats().writes, 2u);
  // A forced flush (the end of a run) writes at once.
  store_.save();
  store_.flush(run_clock_.now(), /*force=*/true);
  EXPECT_EQ(store_.write_stats().writes, 3u);
}

TEST_F(StateStoreTest, NothingIsWrittenWhenNothingChanged) {
  store_.flush(run_clock_.now(), /*force=*/true);
  EXPECT_EQ(store_.write_stats().writes, 0u);
  EXPECT_FALSE(std::filesystem::exists(temp_.path() / "state.json"));
}

}  // namespace
}  // namespace kgym::run
