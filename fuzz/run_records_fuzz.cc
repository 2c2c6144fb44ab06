// The readers of a run directory's records, as `kgym report`, `kgym
// monitor`, `kgym history index` and a resumed run meet them: run.json,
// state.json and a case's result.json (parts 0, 1 and 2 of the input)
// written into a run directory, then read back by each. Damaged records are
// skipped or refused with a message naming the file; none may crash a
// reader or throw past it.
#include <fstream>

#include "core/result.h"
#include "core/run_state.h"
#include "fuzz/fuzz_util.h"
#include "history/index.h"
#include "history/schema.h"
#include "monitor/frame.h"
#include "monitor/monitor_loop.h"
#include "report/load_results.h"
#include "report/run_info.h"

namespace {

void write(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

kgym::history::Database& database() {
  static kgym::history::Database db = [] {
    auto db = kgym::history::Database::open(":memory:", std::chrono::milliseconds(0));
    kgym::history::migrate(db);
    return db;
  }();
  return db;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym;
  std::vector<std::string_view> parts = fuzz::split_parts(fuzz::as_text(data, size));
  parts.resize(3);
  const std::filesystem::path run = fuzz::scratch_dir() / "run";
  const std::filesystem::path case_dir = run / "cases/level1/19_ReLU";
  static bool made = std::filesystem::create_directories(case_dir);
  (void)made;
  write(run / "run.json", parts[0]);
  write(run / "state.json", parts[1]);
  write(case_dir / "result.json", parts[2]);

  report::LoadedResults loaded = report::load_results(run);
  for (const report::LoadError& e : loaded.errors) {
    if (e.message.empty()) fuzz::contract_broken("a load error without a message");
  }
  report::RecoveredRunInfo info = report::recover_run_info(run, loaded);
  // The summaries are rendered from what was read (summary.json, .md, report.html).
  auto summary = report::write_summary(run, loaded.results, info.info);
  if (!summary && summary.error().empty()) fuzz::contract_broken("a summary error without a message");

  auto state = monitor::read_state(run / "state.json");
  if (state) {
    (void)monitor::render_frame(*state, 1.7e9, 100, 40);
  } else if (state.error().empty()) {
    fuzz::contract_broken("a state error without a message");
  }

  // The history index writes what it read: a damaged run is refused or its
  // unreadable results skipped, with a message.
  auto indexed = history::index_run(database(), run);
  if (!indexed && indexed.error().empty()) fuzz::contract_broken("an index error without a message");

  // The records as a resumed run parses them (json exceptions are caught
  // and reported there; nothing else may escape).
  for (std::string_view text : {parts[1], parts[2]}) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    try {
      (void)run_state_from_json(j);
    } catch (const nlohmann::json::exception&) {
    }
    try {
      (void)result_from_json(j);
    } catch (const nlohmann::json::exception&) {
    }
  }
  return 0;
}
