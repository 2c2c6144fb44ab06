#include "run/printer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace kgym::run {
namespace {

// A FILE* whose bytes the test can read: the fake terminal or pipe.
class MemoryStream {
 public:
  MemoryStream() : file_(::open_memstream(&data_, &size_)) {}
  ~MemoryStream() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* file_;
};

RunState state_with(std::initializer_list<std::pair<const char*, const char*>> phases_and_verdicts) {
  RunState s;
  int n = 0;
  for (auto [phase, verdict] : phases_and_verdicts) {
    CaseState c;
    c.id = "level1/" + std::to_string(++n) + "_Case";
    c.phase = phase;
    if (verdict) c.verdict = verdict;
    s.cases.push_back(c);
  }
  return s;
}

CaseResult result(Verdict v, const char* id) {
  CaseResult r;
  r.case_id = id;
  r.verdict = v;
  r.reason = v == Verdict::kPass ? "all trials match" : "output 0 differs";
  r.timings.total_s = 12.34;
  return r;
}

TEST(ProgressOf, CountsVerdictsAndRunningPhases) {
  Progress p = progress_of(state_with({{"done", "pass"},
                                       {"done", "fail_cheat"},
                                       {"done", "timeout"},
                                       {"generating", nullptr},
                                       {"verifying", nullptr},
                                       {"pending", nullptr},
                                       {"not_run", nullptr}}));
  EXPECT_EQ(p.total, 7u);
  EXPECT_EQ(p.done, 3u);
  EXPECT_EQ(p.pass, 1u);
  EXPECT_EQ(p.cheat, 1u);
  EXPECT_EQ(p.fail, 1u);
  EXPECT_EQ(p.running, 2u);
}

TEST(StatusText, ShowsCountsElapsedAndEta) {
  Progress p{.total = 10, .done = 4, .pass = 2, .fail = 1, .cheat = 1, .running = 3};
  EXPECT_EQ(status_text(p, 65, 0, 200), "[4/10] pass 2 · fail 1 · cheat 1 · running 3 · 1m05s");
  // 4 cases in 80 s: 20 s each, 6 left.
  EXPECT_EQ(status_text(p, 80, 4, 200), "[4/10] pass 2 · fail 1 · cheat 1 · running 3 · 1m20s · ETA 2m00s");
  EXPECT_EQ(status_text(p, 80, 4, 20), "[4/10] pass 2 · fai…");
}

TEST(Printer, PlainStreamGetsOneLinePerEventAndNoEscapes) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer printer(out.file(), err.file(), PrinterOptions{.live = false, .color = false, .width = 80}, clock);
  printer.progress(state_with({{"generating", nullptr}, {"pending", nullptr}}));
  printer.case_finished(1, 2, result(Verdict::kPass, "level1/1_A"));
  printer.progress(state_with({{"done", "pass"}, {"verifying", nullptr}}));
  printer.case_finished(2, 2, result(Verdict::kFailCorrectness, "level1/2_B"));
  printer.error("kgym: warning: disk full");
  printer.end_progress();
  std::string text = out.text();
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(
      text,
      "[1/2] pass              level1/1_A                                  -   12.3s\n"
      "[2/2] fail_correctness  level1/2_B                                  -   12.3s  output 0 differs\n");
  EXPECT_EQ(err.text(), "kgym: warning: disk full\n");
}

TEST(Printer, AnUncertainSpeedupIsMarkedOnItsLine) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer printer(out.file(), err.file(), PrinterOptions{.live = false, .color = false, .width = 80}, clock);
  CaseResult r = result(Verdict::kPass, "level1/1_A");
  r.performance.emplace();
  r.performance->speedup.median = 1.42;
  r.performance->flags = {"uncertain"};
  printer.case_finished(1, 1, r);
  EXPECT_NE(out.text().find("1.42x   12.3s  speedup uncertain"), std::string::npos) << out.text();
}

TEST(Printer, TerminalKeepsOneStatusLineBelowFinishedCases) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer printer(out.file(), err.file(), PrinterOptions{.live = true, .color = false, .width = 100}, clock);
  printer.progress(state_with({{"generating", nullptr}, {"pending", nullptr}}));
  clock.advance(std::chrono::seconds(30));
  printer.case_finished(1, 2, result(Verdict::kPass, "level1/1_A"));
  printer.progress(state_with({{"done", "pass"}, {"verifying", nullptr}}));
  printer.end_progress();
  printer.line("summary");
  EXPECT_EQ(out.text(),
            "\r\x1b[K[0/2] pass 0 · fail 0 · cheat 0 · running 1 · 0.0s"
            "\r\x1b[K[1/2] pass              level1/1_A                                  -   12.3s\n"
            "\r\x1b[K[0/2] pass 0 · fail 0 · cheat 0 · running 1 · 0.0s"
            "\r\x1b[K[1/2] pass 1 · fail 0 · cheat 0 · running 1 · 30.0s · ETA 30.0s"
            "\r\x1b[K"
            "summary\n");
}

// Counting is O(cases): a burst of calls (one per loop turn and per
// finished case) counts once per kRecountInterval.
TEST(Printer, StatusLineIsRecountedAtMostOncePerInterval) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer printer(out.file(), err.file(), PrinterOptions{.live = true, .color = false, .width = 100}, clock);
  printer.progress(state_with({{"generating", nullptr}}));
  clock.advance(Printer::kRecountInterval / 2);
  printer.progress(state_with({{"done", "pass"}}));
  clock.advance(Printer::kRecountInterval / 2);
  printer.progress(state_with({{"done", "pass"}}));
  EXPECT_EQ(out.text(),
            "\r\x1b[K[0/1] pass 0 · fail 0 · cheat 0 · running 1 · 0.0s"
            "\r\x1b[K[1/1] pass 1 · fail 0 · cheat 0 · running 0 · 0.1s");
}

TEST(Printer, ErrorsClearTheStatusLineAndRedrawIt) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer printer(out.file(), err.file(), PrinterOptions{.live = true, .color = false, .width = 100}, clock);
  printer.progress(state_with({{"generating", nullptr}}));
  printer.error("kgym: warning: x");
  EXPECT_EQ(out.text(),
            "\r\x1b[K[0/1] pass 0 · fail 0 · cheat 0 · running 1 · 0.0s"
            "\r\x1b[K"
            "\r\x1b[K[0/1] pass 0 · fail 0 · cheat 0 · running 1 · 0.0s");
  EXPECT_EQ(err.text(), "kgym: warning: x\n");
}

TEST(Printer, ColourOnlyWhenAsked) {
  MemoryStream out, err;
  util::FakeClock clock;
  Printer colored(out.file(), err.file(), PrinterOptions{.live = true, .color = true, .width = 100}, clock);
  colored.case_finished(1, 1, result(Verdict::kFailCheat, "level1/1_A"));
  EXPECT_NE(out.text().find("\x1b[35mfail_cheat"), std::string::npos);
  MemoryStream plain_out;
  Printer plain(plain_out.file(), err.file(), PrinterOptions{.live = true, .color = false, .width = 100},
                clock);
  plain.case_finished(1, 1, result(Verdict::kFailCheat, "level1/1_A"));
  EXPECT_EQ(plain_out.text().find("\x1b[35m"), std::string::npos);
}

TEST(DetectPrinterOptions, PipeIsNeitherLiveNorColoured) {
  MemoryStream out;  // not a terminal
  PrinterOptions o = detect_printer_options(out.file());
  EXPECT_FALSE(o.live);
  EXPECT_FALSE(o.color);
}

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DetectPrinterOptions, TerminalIsLiveAndColouredUnlessNoColorOrDumb) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  std::FILE* tty = std::fopen(::ptsname(master), "w");
  ASSERT_NE(tty, nullptr);
  {
    ScopedEnv term("TERM", "xterm"), no_color("NO_COLOR", nullptr);
    PrinterOptions o = detect_printer_options(tty);
    EXPECT_TRUE(o.live);
    EXPECT_TRUE(o.color);
  }
  {
    ScopedEnv term("TERM", "xterm"), no_color("NO_COLOR", "1");
    PrinterOptions o = detect_printer_options(tty);
    EXPECT_TRUE(o.live);
    EXPECT_FALSE(o.color);
  }
  {
    ScopedEnv term("TERM", "xterm"), no_color("NO_COLOR", "");  // empty: not set, per no-color.org
    EXPECT_TRUE(detect_printer_options(tty).color);
  }
  {
    ScopedEnv term("TERM", "dumb"), no_color("NO_COLOR", nullptr);
    PrinterOptions o = detect_printer_options(tty);
    EXPECT_FALSE(o.live);
    EXPECT_FALSE(o.color);
  }
  std::fclose(tty);
  ::close(master);
}

}  // namespace
}  // namespace kgym::run
