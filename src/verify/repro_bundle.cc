// Writing a case's reproduction bundle (verify/repro_bundle.h).
#include "verify/repro_bundle.h"

#include <fmt/format.h>

#include "core/build_info.h"
#include "core/case_paths.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/gzip.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "verify/candidate_sources.h"

namespace kgym::verify {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;
using util::TarEntry;

std::expected<json, std::string> read_json(const fs::path& file) {
  auto text = util::read_file(file);
  if (!text) return std::unexpected(text.error());
  json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return std::unexpected(fmt::format("{}: not valid JSON", file.string()));
  return document;
}

// RUN_DIR/run.json of the run `case_dir` lies in (a case's dir or a
// sample's), or null when there is none.
json run_record(const fs::path& case_dir) {
  fs::path dir = case_dir;
  for (int up = 0; up < 6 && dir.has_relative_path(); ++up, dir = dir.parent_path()) {
    std::error_code ec;
    if (fs::is_regular_file(RunPaths{dir}.run_record(), ec)) {
      auto record = read_json(RunPaths{dir}.run_record());
      if (record && record->is_object()) return *record;
    }
  }
  return nullptr;
}

// The part of run.json a bundle keeps: never the config (agent.env may hold
// API keys), only what describes the machine and the interpreter.
json run_facts(const json& run) {
  json facts = json::object();
  if (!run.is_object()) return nullptr;
  for (const char* key :
       {"run_dir", "started_at", "run_seed", "backend", "mode", "python", "torch_version", "torch_build"}) {
    if (run.contains(key)) facts[key] = run[key];
  }
  return facts;
}

std::expected<TarEntry, std::string> file_entry(const std::string& path, const fs::path& from) {
  if (auto why = util::unsafe_archive_path(path))
    return std::unexpected(fmt::format("{}: cannot be bundled as '{}': {}", from.string(), path, *why));
  auto bytes = util::read_file(from);
  if (!bytes) return std::unexpected(bytes.error());
  return TarEntry{path, TarEntry::Type::kFile, std::move(*bytes)};
}

}  // namespace

std::optional<fs::path> case_request_file(const fs::path& case_dir, const CaseResult& result) {
  CasePaths paths{case_dir};
  // A case run with samples: its own dir holds only the result.
  if (result.samples) paths = paths.sample(result.samples->chosen);
  std::error_code ec;
  for (const fs::path& file : {paths.verify_request(), paths.build_request()}) {
    if (fs::is_regular_file(file, ec)) return file;
  }
  return std::nullopt;
}

json bundle_manifest(const std::string& case_id, const std::vector<TarEntry>& files) {
  json list = json::array();
  for (const TarEntry& f : files) {
    if (f.type != TarEntry::Type::kFile) continue;
    list.push_back({{"path", f.path}, {"bytes", f.data.size()}, {"sha256", util::sha256_hex(f.data)}});
  }
  return {{"format", kBundleFormat},
          {"format_version", kBundleFormatVersion},
          {"case_id", case_id},
          {"files", list}};
}

std::expected<void, std::string> write_case_bundle(const fs::path& case_dir_given, const fs::path& out) {
  fs::path case_dir = fs::absolute(case_dir_given).lexically_normal();
  if (case_dir.has_relative_path() && case_dir.filename().empty()) case_dir = case_dir.parent_path();
  CasePaths paths{case_dir};
  auto result_text = util::read_file(paths.result());
  if (!result_text)
    return std::unexpected(
        fmt::format("{}; give the directory of a finished case of a run "
                    "(RUN_DIR/cases/<level>/<N>_<Name>)",
                    result_text.error()));
  CaseResult result;
  try {
    result = result_from_json(json::parse(*result_text));
  } catch (const json::exception& e) {
    return std::unexpected(fmt::format("{}: not a result record: {}", paths.result().string(), e.what()));
  }
  auto found = case_request_file(case_dir, result);
  if (!found) {
    return std::unexpected(fmt::format(
        "{} has no verify_request.json: the case ended before its verification ({}: {}); there is "
        "nothing to reproduce",
        case_dir.string(), to_string(result.verdict), result.reason));
  }
  fs::path request_file = *found;
  auto request_json = read_json(request_file);
  if (!request_json) return std::unexpected(request_json.error());
  VerifyRequest req;
  try {
    req = verify_request_from_json(*request_json);
  } catch (const json::exception& e) {
    return std::unexpected(
        fmt::format("{}: not a verification request: {}", request_file.string(), e.what()));
  }

  std::vector<TarEntry> files;
  std::string problem_path = fmt::format("{}/{}", BundleFiles::kProblemDir, req.problem.filename().string());
  auto problem = file_entry(problem_path, req.problem);
  if (!problem) return std::unexpected(problem.error());
  files.push_back(std::move(*problem));
  std::string candidate_path =
      fmt::format("{}/{}", BundleFiles::kCandidateDir, req.candidate.filename().string());
  auto siblings = candidate_siblings(req.candidate, req.problem);
  if (!siblings) return std::unexpected(siblings.error());
  std::vector<fs::path> sources{req.candidate};
  sources.insert(sources.end(), siblings->begin(), siblings->end());
  for (const fs::path& source : sources) {
    auto entry =
        file_entry(fmt::format("{}/{}", BundleFiles::kCandidateDir, source.filename().string()), source);
    if (!entry) return std::unexpected(entry.error());
    files.push_back(std::move(*entry));
  }

  // The request as it will run elsewhere: bundle paths, nothing of this machine.
  req.problem = problem_path;
  req.candidate = candidate_path;
  forget_machine(req);
  files.push_back(
      {std::string(BundleFiles::kRequest), TarEntry::Type::kFile, util::json_text(to_json(req), 2) + "\n"});
  files.push_back({std::string(BundleFiles::kResult), TarEntry::Type::kFile, *result_text});
  json run = run_record(case_dir);
  json provenance = {
      {"kgym", {{"version", kgym_version()}, {"commit", kgym_commit()}}},
      {"bundled_at", util::iso8601_utc(util::unix_now())},
      {"case_id", result.case_id},
      {"case_dir", case_dir.string()},
      {"request_file", request_file.string()},
      {"environment", result.environment ? json{{"python", result.environment->python},
                                                {"torch_version", result.environment->torch_version},
                                                {"torch_build", result.environment->torch_build}}
                                         : json(nullptr)},
      {"machine", run.is_object() && run.contains("machine") ? run["machine"] : json(nullptr)},
      {"run", run_facts(run)},
  };
  files.push_back(
      {std::string(BundleFiles::kProvenance), TarEntry::Type::kFile, util::json_text(provenance, 2) + "\n"});

  std::vector<TarEntry> entries;
  entries.push_back({std::string(BundleFiles::kManifest), TarEntry::Type::kFile,
                     util::json_text(bundle_manifest(result.case_id, files), 2) + "\n"});
  entries.push_back({std::string(BundleFiles::kProblemDir), TarEntry::Type::kDirectory, ""});
  entries.push_back({std::string(BundleFiles::kCandidateDir), TarEntry::Type::kDirectory, ""});
  entries.insert(entries.end(), std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
  auto archive = util::write_tar(entries);
  if (!archive) return std::unexpected(archive.error());
  auto packed = util::gzip_compress(*archive);
  if (!packed) return std::unexpected(packed.error());
  if (fs::path parent = fs::absolute(out).parent_path(); !parent.empty()) {
    if (auto made = util::make_dirs(parent); !made) return made;
  }
  return util::write_file_atomic(fs::absolute(out), *packed);
}

void forget_machine(VerifyRequest& req) {
  req.scratch_dir.clear();
  req.python.clear();
  req.config.python.reset();
  req.warm.reset();
  req.prebuilt.clear();
  req.pch_root.reset();
  req.pch_dir.reset();
  req.sandbox_hidden.clear();
  req.stage = VerifyStage::kBuildThenVerify;
}

}  // namespace kgym::verify
