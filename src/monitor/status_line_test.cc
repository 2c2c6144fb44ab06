#include "monitor/status_line.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "util/text_cells.h"

namespace kgym::monitor {
namespace {

std::string drain(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) out += static_cast<char>(c);
  return out;
}

TEST(StatusText, LabelElapsedAndTheLineWithoutItsStamp) {
  EXPECT_EQ(status_text("kgym verify m.py", 12.7, "[kgym +3.210s] reference loaded", 80),
            "kgym verify m.py · 12s · reference loaded");
  EXPECT_EQ(status_text("kgym lint", 75, "", 80), "kgym lint · 1m15s");
  EXPECT_EQ(status_text("kgym lint", 1, "first\nsecond", 80), "kgym lint · 1s · first");
  std::string cut = status_text("kgym lint", 1, std::string(200, 'x'), 40);
  EXPECT_LE(util::display_width(cut), 39u);  // the width less one cell: the cursor never wraps
}

TEST(StatusLine, RedrawsInPlaceAndErasesBeforeLinesAbove) {
  std::FILE* f = std::tmpfile();
  util::FakeClock clock;
  {
    StatusLine status(f, "kgym lint", true, 80, clock);
    status.set("level1/1_ReLU (1 of 2)");
    clock.advance(std::chrono::seconds(3));
    status.draw();
    status.above([&] { std::fputs("level1/1_ReLU: ok\n", f); });
    status.set("level1/2_LeakyReLU (2 of 2)");
    status.draw();
  }
  EXPECT_EQ(drain(f),
            "\r\x1b[Kkgym lint · 3s · level1/1_ReLU (1 of 2)"
            "\r\x1b[K" "level1/1_ReLU: ok\n"
            "\r\x1b[Kkgym lint · 3s · level1/2_LeakyReLU (2 of 2)"
            "\r\x1b[K");
  std::fclose(f);
}

TEST(StatusLine, DrawsNothingWhenNotLive) {
  std::FILE* f = std::tmpfile();
  util::FakeClock clock;
  {
    StatusLine status(f, "kgym verify", false, 80, clock);
    status.set("reference loaded");
    status.draw();
    status.above([&] { std::fputs("pass: ...\n", f); });
  }
  EXPECT_EQ(drain(f), "pass: ...\n");
  std::fclose(f);
}

}  // namespace
}  // namespace kgym::monitor
