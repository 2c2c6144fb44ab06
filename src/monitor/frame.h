#pragma once
// One screenful of `kgym monitor`: a pure function of the run state, the
// current time and the screen size, so it can be tested as text.
#include <string>

#include "core/run_state.h"

namespace kgym::monitor {

// Renders `state` as at most `height` lines of at most `width` cells each
// (UTF-8; the only non-ASCII characters are "…", "×" and "✗"), joined by '\n'
// with no trailing newline and no escape codes. Sizes below 40×3 are
// treated as 40×3.
//
// Line 1: run directory, status, done/total, pass/fail/cheat/running
//   counts, elapsed time (to `now_unix` while running, to the last update
//   once finished), and "no update for …" when the state is over a minute
//   old.
// Line 2 (8 lines or more): device occupancy — every device of the pool
//   (`state.devices`; when empty, every device a case has used), as
//   "NAME: idle" or "NAME: <case now on it>".
// Then column titles and one row per case: CASE PHASE STAGE TRY DEVICE
//   PID ELAPSED STATUS SPEEDUP. STAGE is shown only when a visible case has
//   one. Columns that do not fit are dropped (PID first, then STAGE, TRY,
//   PHASE, DEVICE); long ids end in "…".
// Rows: running cases (oldest first), then finished cases (most recent
//   first), then pending ones (in state order); when they do not fit, the
//   last line says "… and N more" with a breakdown.
// At the bottom (10 lines or more, when a case failed): "FAILURES (N in
//   all, newest first)" and up to 3 lines "✗ id  verdict: reason"; the
//   table keeps at least 5 lines.
// ELAPSED is the time in the current phase for a running case (up to the
// last update once the run has ended) and the total time for a finished one. STATUS is the verdict once done,
// else the phase.
std::string render_frame(const RunState& state, double now_unix, int width, int height);

}  // namespace kgym::monitor
