#include "report/load_results.h"

#include <algorithm>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "core/case_paths.h"
#include "core/record_files.h"
#include "report/case_order.h"
#include "report/html_plots.h"
#include "report/html_report.h"
#include "util/fs.h"

namespace kgym::report {
namespace fs = std::filesystem;

namespace {

// Sub-directories of `dir`, sorted by name; errors are recorded.
std::vector<fs::path> subdirectories(const fs::path& dir, std::vector<LoadError>& errors) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    errors.push_back({dir, fmt::format("cannot list directory: {}", ec.message())});
    return out;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      errors.push_back({dir, fmt::format("cannot list directory: {}", ec.message())});
      break;
    }
    std::error_code type_ec;
    // symlink_status: a link planted in the run directory is not followed.
    if (it->symlink_status(type_ec).type() == fs::file_type::directory) out.push_back(it->path());
  }
  return out;
}

// `path` as one types it here: relative to the current directory when it
// lies below it, quoted for a POSIX shell when it needs it.
std::string shell_path(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  fs::path cwd = fs::current_path(ec);
  std::string text = absolute.string();
  if (!ec) {
    fs::path relative = absolute.lexically_relative(cwd);
    if (!relative.empty() && *relative.begin() != "..") text = relative.string();
  }
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+=:,@") ==
      std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command that reproduces a case (docs/repro.md): its bundle when the
// run wrote one, else `kgym repro` when the case reached a verification.
std::optional<std::string> repro_command(const fs::path& run_dir, const CaseRow& row,
                                         const std::vector<CaseResult>& results) {
  if (!row.verdict) return std::nullopt;
  CasePaths paths{CasePaths::cases_dir(run_dir) / row.case_id};
  // Paths relative to the run directory, where summary.md and report.html
  // lie: the commands work from there wherever the run was started, and
  // after the run directory is moved or copied.
  CasePaths shown{CasePaths::cases_dir("") / row.case_id};
  std::error_code ec;
  if (fs::is_regular_file(paths.repro_bundle(), ec))
    return "kgym verify --bundle " + shell_path(shown.repro_bundle());
  CasePaths verified = paths;
  for (const CaseResult& r : results) {
    if (r.case_id == row.case_id && r.samples) verified = paths.sample(r.samples->chosen);
  }
  if (fs::is_regular_file(verified.verify_request(), ec) || fs::is_regular_file(verified.build_request(), ec))
    return "kgym repro " + shell_path(shown.dir);
  return std::nullopt;
}

// A case id as run.json lists it: "<level>/<N>_<Name>", two plain components.
bool is_case_id(const std::string& id) {
  std::size_t slash = id.find('/');
  if (slash == std::string::npos || id.find('/', slash + 1) != std::string::npos) return false;
  std::string level = id.substr(0, slash), name = id.substr(slash + 1);
  for (const std::string& part : {level, name}) {
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) return false;
  }
  return true;
}

// run.json's "cases": the case ids the run selected; nullopt when run.json
// cannot be read or has no such list.
std::optional<std::set<std::string>> selected_cases(const fs::path& run_dir) {
  auto text = util::read_file(RunPaths{run_dir}.run_record());
  if (!text) return std::nullopt;
  nlohmann::json run = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!run.is_object()) return std::nullopt;
  auto it = run.find("cases");
  if (it == run.end() || !it->is_array()) return std::nullopt;
  std::set<std::string> ids;
  for (const nlohmann::json& id : *it) {
    if (id.is_string() && is_case_id(id.get<std::string>())) ids.insert(id.get<std::string>());
  }
  return ids;
}

// Reads the result of case `id` into `loaded`: a result, an unfinished
// case, or an error.
void load_case(const fs::path& case_dir, const std::string& id, LoadedResults& loaded) {
  std::error_code ec;
  fs::path file = CasePaths{case_dir}.result();
  if (!fs::exists(fs::symlink_status(file, ec))) {
    loaded.unfinished_case_ids.push_back(id);
    return;
  }
  auto result = read_result_record(file);
  if (result && result->case_id != id) {
    result =
        std::unexpected(fmt::format("case_id '{}' does not match its directory '{}'", result->case_id, id));
  }
  if (!result) {
    loaded.errors.push_back({file, result.error()});
    loaded.unfinished_case_ids.push_back(id);
    return;
  }
  loaded.results.push_back(std::move(*result));
}

}  // namespace

LoadedResults load_results(const fs::path& run_dir) {
  LoadedResults loaded;
  fs::path cases_dir = CasePaths::cases_dir(run_dir);
  std::error_code ec;
  if (!fs::is_directory(cases_dir, ec)) {
    loaded.errors.push_back({cases_dir, "no cases/ directory (is this a kgym run directory?)"});
    return loaded;
  }
  std::optional<std::set<std::string>> selected = selected_cases(run_dir);
  if (!selected) {
    loaded.warnings.push_back(
        fmt::format("{}: no list of the run's selected cases (\"cases\"; run.json missing, damaged or "
                    "older): every result.json under {} is read, whichever case it is for",
                    RunPaths{run_dir}.run_record().string(), cases_dir.string()));
  }
  for (const fs::path& level_dir : subdirectories(cases_dir, loaded.errors)) {
    for (const fs::path& case_dir : subdirectories(level_dir, loaded.errors)) {
      std::string id = level_dir.filename().string() + "/" + case_dir.filename().string();
      if (!selected || selected->contains(id)) {
        load_case(case_dir, id, loaded);
        continue;
      }
      fs::path file = CasePaths{case_dir}.result();
      if (fs::exists(fs::symlink_status(file, ec))) {
        loaded.warnings.push_back(
            fmt::format("{}: ignored: a result for case '{}', which this run did not select (run.json's "
                        "\"cases\"); a run writes results only for its own cases, so remove this file",
                        file.string(), id));
      }
    }
  }
  std::sort(loaded.results.begin(), loaded.results.end(),
            [](const CaseResult& a, const CaseResult& b) { return case_id_less(a.case_id, b.case_id); });
  std::sort(loaded.unfinished_case_ids.begin(), loaded.unfinished_case_ids.end(),
            [](const std::string& a, const std::string& b) { return case_id_less(a, b); });
  return loaded;
}

std::expected<Summary, std::string> write_summary(const fs::path& run_dir,
                                                  const std::vector<CaseResult>& results,
                                                  const RunInfo& info) {
  Summary summary = summarize(results, info.selected_case_ids);
  for (CaseRow& row : summary.cases) row.repro_command = repro_command(run_dir, row, results);
  // Reasons may quote tool output that is not valid UTF-8; replace, never throw.
  std::string json_text =
      summary_json(summary, info).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (auto ok = util::write_file_atomic(RunPaths{run_dir}.summary_json(), json_text); !ok) {
    return std::unexpected(ok.error());
  }
  if (auto ok = util::write_file_atomic(RunPaths{run_dir}.summary_md(), summary_markdown(summary, info));
      !ok) {
    return std::unexpected(ok.error());
  }
  // summary.md shows the roofline as a file beside it.
  if (summary.roofline && summary.roofline->plotted > 0) {
    std::string svg = roofline_plot(summary);
    if (auto cut = svg.find("</svg>"); cut != std::string::npos) svg.resize(cut + 6);
    if (auto ok = util::write_file_atomic(RunPaths{run_dir}.roofline_svg(), svg + "\n"); !ok)
      return std::unexpected(ok.error());
  }
  HtmlReportInput html;
  html.summary = &summary;
  html.info = &info;
  html.results = &results;
  std::vector<std::string> ids;
  for (const CaseRow& row : summary.cases) ids.push_back(row.case_id);
  html.files = find_case_files(run_dir, ids);
  if (auto text = util::read_file(RunPaths{run_dir}.run_record())) {
    html.run_record = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (html.run_record.is_discarded()) html.run_record = nullptr;
  }
  if (info.config_path) {
    if (auto text = util::read_file(*info.config_path)) html.config_text = *text;
  }
  if (auto ok = util::write_file_atomic(RunPaths{run_dir}.report_html(), html_report(html)); !ok) {
    return std::unexpected(ok.error());
  }
  return summary;
}

}  // namespace kgym::report
