#include "monitor/frame.h"

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/text_cells.h"

namespace kgym::monitor {
namespace {

constexpr int kMinWidth = 40;
constexpr int kMinHeight = 3;
constexpr std::size_t kGap = 2;
constexpr std::size_t kMinIdCells = 16;
constexpr std::size_t kMinDirCells = 12;
constexpr double kStaleAfterSeconds = 60;
constexpr std::string_view kNone = "-";
constexpr std::size_t kMinTableRows = 5;  // title + 4 cases
constexpr std::size_t kMaxFailureRows = 3;

bool is_done(const CaseState& c) { return c.phase == "done"; }
bool is_pending(const CaseState& c) { return c.phase == "pending"; }
bool is_running(const CaseState& c) { return !is_done(c) && !is_pending(c); }

struct Column {
  std::string_view title;
  std::size_t width;
  bool align_right;
  int keep_priority;  // lowest is dropped first
};

enum ColumnIndex { kCase, kPhase, kStage, kTry, kDevice, kPid, kElapsed, kStatus, kSpeedup, kColumnCount };

using Cells = std::array<std::string, kColumnCount>;

std::string duration_or_none(std::optional<double> from, std::optional<double> to) {
  if (!from || !to) return std::string(kNone);
  std::string d = util::compact_duration(*to - *from);
  return d.empty() ? std::string(kNone) : d;
}

Cells row_cells(const CaseState& c, double now) {
  Cells cells;
  cells[kCase] = c.id;
  cells[kPhase] = c.phase;
  // A case with several samples: which one the phase belongs to ("s2/4"),
  // or how many have ended once it is done ("4/4").
  if (c.samples > 1) {
    cells[kPhase] += is_done(c) ? fmt::format(" {}/{}", c.samples_done, c.samples)
                                : fmt::format(" s{}/{}", c.sample, c.samples);
  }
  // A later refinement round (agent.feedback): "generating r2".
  if (c.round > 1 && !is_done(c)) cells[kPhase] += fmt::format(" r{}", c.round);
  cells[kStage] = c.stage.empty() ? std::string(kNone) : c.stage;
  cells[kTry] = c.attempt > 0 ? std::to_string(c.attempt) : std::string(kNone);
  // On a Slurm cluster (docs/cluster.md) a case-sample's node and array
  // task stand where a local run shows its device and pid.
  cells[kDevice] = c.device.value_or(c.node.value_or(std::string(kNone)));
  cells[kPid] = c.pid ? std::to_string(*c.pid) : c.job.value_or(std::string(kNone));
  if (is_running(c)) {
    cells[kElapsed] = duration_or_none(c.phase_started_at, now);
  } else if (is_done(c)) {
    cells[kElapsed] = duration_or_none(c.started_at, c.finished_at);
  } else {
    cells[kElapsed] = std::string(kNone);
  }
  cells[kStatus] = is_done(c) ? c.verdict.value_or("done") : c.phase;
  // A re-prompted workflow stage: how many of its checks failed last time.
  if (is_running(c) && !c.failed_gates.empty())
    cells[kStatus] =
        fmt::format("{} check{} failed", c.failed_gates.size(), c.failed_gates.size() == 1 ? "" : "s");
  cells[kSpeedup] = c.speedup ? fmt::format("{:.2f}\u00d7", *c.speedup) : std::string(kNone);
  return cells;
}

// `dir` cut from the left to `width` cells ("…/runs/2023-11-14_221320"):
// the end of a run directory is its name.
std::string keep_tail(const std::string& dir, std::size_t width) {
  std::size_t cells = util::display_width(dir);
  if (cells <= width) return dir;
  if (width == 0) return "";
  std::size_t drop = cells - width + 1;  // + 1 for the "…"
  std::size_t byte = 0;
  for (std::size_t seen = 0; byte < dir.size() && seen < drop; ++seen) {
    ++byte;
    while (byte < dir.size() && (static_cast<unsigned char>(dir[byte]) & 0xC0) == 0x80) ++byte;
  }
  return "\u2026" + dir.substr(byte);
}

std::string header_line(const RunState& s, double now, std::size_t width) {
  int done = 0, pass = 0, cheat = 0, running = 0;
  for (const CaseState& c : s.cases) {
    if (is_done(c)) ++done;
    if (is_done(c) && c.verdict == "pass") ++pass;
    if (is_done(c) && c.verdict == "fail_cheat") ++cheat;
    if (is_running(c)) ++running;
  }
  const int fail = done - pass - cheat;
  bool live = s.status == "running";
  double end = live ? now : s.updated_at;
  std::string elapsed = s.started_at > 0 ? util::compact_duration(end - s.started_at) : "";
  if (elapsed.empty()) elapsed = std::string(kNone);
  std::string stale;
  if (live && s.updated_at > 0 && now - s.updated_at > kStaleAfterSeconds) {
    stale = fmt::format("  (no update for {})", util::compact_duration(now - s.updated_at));
  }
  std::string dir = s.run_dir.empty() ? "(no run dir)" : s.run_dir;
  // The long form when it leaves room for a useful part of the run
  // directory, else a compact one; the directory gives way first.
  std::string tail = fmt::format("  {}  {}/{} done  pass {}  fail {}  cheat {}  running {}  elapsed {}{}",
                                 s.status, done, s.cases.size(), pass, fail, cheat, running, elapsed, stale);
  const std::size_t min_dir = std::min(util::display_width(dir), kMinDirCells);
  if (util::display_width(tail) + min_dir > width) {
    tail = fmt::format("  {} {}/{}  pass {} fail {} cheat {} run {}  {}{}", s.status, done, s.cases.size(),
                       pass, fail, cheat, running, elapsed, stale);
  }
  std::size_t tail_cells = util::display_width(tail);
  std::size_t dir_room = width > tail_cells ? width - tail_cells : 0;
  if (dir_room < min_dir) return util::truncate_cells(tail.substr(2), width);
  return keep_tail(dir, dir_room) + tail;
}

// "devices 1/2 busy  cpu0: idle  cpu1: level1/2_Std…": the run's device
// pool (older state files do not list it: then every device a case has
// used so far), with the case now on each.
std::string devices_line(const RunState& s, std::size_t width) {
  std::vector<std::string> names = s.devices;
  if (names.empty()) {
    for (const CaseState& c : s.cases) {
      if (c.device && std::find(names.begin(), names.end(), *c.device) == names.end())
        names.push_back(*c.device);
    }
    std::sort(names.begin(), names.end());
  }
  if (names.empty() &&
      std::any_of(s.cases.begin(), s.cases.end(), [](const CaseState& c) { return c.job; })) {
    int queued = 0, running = 0;
    std::set<std::string> nodes;
    for (const CaseState& c : s.cases) {
      if (c.phase == "queued") ++queued;
      if (c.phase != "queued" && c.phase != "done" && c.phase != "not_run" && c.job) ++running;
      if (c.node && c.phase != "done") nodes.insert(*c.node);
    }
    return util::truncate_cells(
        fmt::format("slurm  {} running, {} queued  nodes: {}", running, queued,
                    nodes.empty() ? "none" : fmt::format("{}", fmt::join(nodes, " "))),
        width);
  }
  if (names.empty()) return util::truncate_cells("devices  none used yet", width);
  std::vector<std::string> parts;
  int busy = 0;
  for (const std::string& name : names) {
    // The scheduler lists each holder (a sample during generation with
    // agent.needs_device, or a verification); older files only have rows.
    std::optional<std::string> holder;
    if (s.device_holders) {
      if (auto it = s.device_holders->find(name); it != s.device_holders->end()) holder = it->second;
    } else {
      auto user = std::find_if(s.cases.begin(), s.cases.end(),
                               [&](const CaseState& c) { return is_running(c) && c.device == name; });
      if (user != s.cases.end()) holder = user->id;
    }
    if (holder) ++busy;
    if (!holder) {
      parts.push_back(name + ": idle");
      continue;
    }
    // "level1/2_Op s2/3": the case id is shortened, never the sample.
    std::size_t space = holder->find(' ');
    std::string suffix = space == std::string::npos ? "" : holder->substr(space);
    parts.push_back(name + ": " + util::truncate_cells(holder->substr(0, space), kMinIdCells + 4) + suffix);
  }
  return util::truncate_cells(
      fmt::format("devices {}/{} busy  {}", busy, names.size(), fmt::join(parts, "  ")), width);
}

// The newest failed cases (verdict other than pass), newest first.
std::vector<const CaseState*> newest_failures(const RunState& s) {
  std::vector<const CaseState*> failed;
  for (const CaseState& c : s.cases) {
    if (is_done(c) && c.verdict && *c.verdict != "pass") failed.push_back(&c);
  }
  std::stable_sort(failed.begin(), failed.end(), [](const CaseState* a, const CaseState* b) {
    return a->finished_at.value_or(0) > b->finished_at.value_or(0);
  });
  return failed;
}

std::string failure_line(const CaseState& c, std::size_t width) {
  std::string reason = c.reason.empty() ? std::string(kNone) : c.reason;
  std::string id = util::truncate_cells(c.id, std::max(kMinIdCells, width / 3));
  return util::truncate_cells(fmt::format("\u2717 {}  {}: {}", id, *c.verdict, reason), width);
}

// The rows to show, in display order (see frame.h).
std::vector<const CaseState*> ordered_cases(const RunState& s) {
  std::vector<const CaseState*> running, done, pending;
  for (const CaseState& c : s.cases) {
    (is_running(c) ? running : is_done(c) ? done : pending).push_back(&c);
  }
  std::stable_sort(running.begin(), running.end(), [](const CaseState* a, const CaseState* b) {
    return a->started_at.value_or(0) < b->started_at.value_or(0);
  });
  std::stable_sort(done.begin(), done.end(), [](const CaseState* a, const CaseState* b) {
    return a->finished_at.value_or(0) > b->finished_at.value_or(0);
  });
  std::vector<const CaseState*> out = std::move(running);
  out.insert(out.end(), done.begin(), done.end());
  out.insert(out.end(), pending.begin(), pending.end());
  return out;
}

std::string more_line(const std::vector<const CaseState*>& hidden) {
  int running = 0, done = 0, pending = 0;
  for (const CaseState* c : hidden) {
    is_running(*c) ? ++running : is_done(*c) ? ++done : ++pending;
  }
  std::vector<std::string> parts;
  if (running > 0) parts.push_back(fmt::format("{} running", running));
  if (done > 0) parts.push_back(fmt::format("{} done", done));
  if (pending > 0) parts.push_back(fmt::format("{} pending", pending));
  return fmt::format("\u2026 and {} more ({})", hidden.size(), fmt::join(parts, ", "));
}

std::string render_row(const std::array<Column, kColumnCount>& columns, const std::vector<int>& shown,
                       const Cells& cells) {
  std::string line;
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const Column& col = columns[shown[k]];
    if (k > 0) line += std::string(kGap, ' ');
    line += util::fit_cells(cells[shown[k]], col.width, col.align_right);
  }
  return util::trim_right(std::move(line));
}

}  // namespace

std::string render_frame(const RunState& state, double now_unix, int width, int height) {
  const auto cols = static_cast<std::size_t>(std::max(width, kMinWidth));
  const auto rows = static_cast<std::size_t>(std::max(height, kMinHeight));

  std::vector<const CaseState*> order = ordered_cases(state);
  // The table keeps at least kMinTableRows rows; the devices line and the
  // failures section appear only when that leaves room for them.
  std::vector<const CaseState*> failures = newest_failures(state);
  const bool show_devices = rows >= kMinTableRows + 3;
  std::size_t failure_rows = 0;
  if (!failures.empty() && rows >= kMinTableRows + 5) {
    failure_rows = std::min({failures.size(), kMaxFailureRows, rows - kMinTableRows - 4});
  }
  std::size_t row_room = rows - 2 - (show_devices ? 1 : 0) - (failure_rows > 0 ? failure_rows + 1 : 0);
  std::size_t visible = order.size() <= row_room ? order.size() : row_room - 1;

  // Once the run has ended, its clock stopped at the last update.
  const double case_now = state.status == "running" || state.updated_at <= 0 ? now_unix : state.updated_at;
  std::vector<Cells> cells;
  for (std::size_t i = 0; i < visible; ++i) cells.push_back(row_cells(*order[i], case_now));

  std::array<Column, kColumnCount> columns = {{{"CASE", 4, false, 9},
                                               {"PHASE", 14, false, 3},
                                               {"STAGE", 5, false, 1},
                                               {"TRY", 3, true, 2},
                                               {"DEVICE", 6, false, 4},
                                               {"PID", 7, true, 0},
                                               {"ELAPSED", 9, true, 6},
                                               {"STATUS", 17, false, 8},
                                               {"SPEEDUP", 7, true, 7}}};
  // Variable columns grow to their widest visible cell, within limits.
  std::size_t longest_id = 4;
  for (const Cells& c : cells) {
    longest_id = std::max(longest_id, util::display_width(c[kCase]));
    columns[kStage].width =
        std::clamp(util::display_width(c[kStage]), columns[kStage].width, std::size_t{14});
    columns[kDevice].width =
        std::clamp(util::display_width(c[kDevice]), columns[kDevice].width, std::size_t{10});
    // "waiting_device s2/4" with samples per case.
    columns[kPhase].width =
        std::clamp(util::display_width(c[kPhase]), columns[kPhase].width, std::size_t{20});
  }
  // STAGE only when some visible case is in a workflow stage (runs without
  // workflows never have one).
  const bool any_stage =
      std::any_of(cells.begin(), cells.end(), [](const Cells& c) { return c[kStage] != kNone; });
  std::vector<int> shown;
  for (int k = 0; k < kColumnCount; ++k) {
    if (k != kStage || any_stage) shown.push_back(k);
  }
  while (true) {
    std::size_t used = 0;
    for (int k : shown) {
      if (k != kCase) used += columns[k].width + kGap;
    }
    std::size_t room = cols > used ? cols - used : 0;
    if (room >= std::min(longest_id, kMinIdCells) || shown.size() == 1) {
      columns[kCase].width = std::min(longest_id, room);
      break;
    }
    auto victim = std::min_element(shown.begin() + 1, shown.end(), [&](int a, int b) {
      return columns[a].keep_priority < columns[b].keep_priority;
    });
    shown.erase(victim);
  }

  std::vector<std::string> lines = {header_line(state, now_unix, cols)};
  if (show_devices) lines.push_back(devices_line(state, cols));
  Cells titles;
  for (int k = 0; k < kColumnCount; ++k) titles[k] = std::string(columns[k].title);
  if (std::any_of(state.cases.begin(), state.cases.end(), [](const CaseState& c) { return c.job; })) {
    titles[kDevice] = "NODE";
    titles[kPid] = "JOB";
  }
  lines.push_back(render_row(columns, shown, titles));
  for (const Cells& c : cells) lines.push_back(render_row(columns, shown, c));
  if (visible < order.size()) {
    std::vector<const CaseState*> hidden(order.begin() + static_cast<std::ptrdiff_t>(visible), order.end());
    lines.push_back(util::truncate_cells(more_line(hidden), cols));
  }
  if (state.cases.empty()) lines.push_back("(no cases yet)");
  if (failure_rows > 0) {
    lines.push_back(
        util::truncate_cells(fmt::format("FAILURES ({} in all, newest first)", failures.size()), cols));
    for (std::size_t i = 0; i < failure_rows; ++i) lines.push_back(failure_line(*failures[i], cols));
  }
  return fmt::format("{}", fmt::join(lines, "\n"));
}

}  // namespace kgym::monitor
