// Opening a reproduction bundle (verify/repro_bundle.h): every check runs
// on the archive in memory; only a bundle that passes them all is extracted.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "util/cpu_set.h"
#include "util/fs.h"
#include "util/gzip.h"
#include "util/sha256.h"
#include "util/unique_fd.h"
#include "verify/repro_bundle.h"

namespace kgym::verify {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;
using util::TarEntry;

bool is_hex_digest(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The manifest's checks: its format, every file of the archive listed once
// with the hash of its bytes, nothing listed that the archive lacks.
std::expected<json, std::string> check_manifest(const std::map<std::string, const TarEntry*>& files) {
  std::string name(BundleFiles::kManifest);
  auto it = files.find(name);
  if (it == files.end()) return std::unexpected("no manifest.json at the bundle's root; not a kgym bundle");
  json manifest = json::parse(it->second->data, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return std::unexpected("manifest.json: not a JSON object");
  if (manifest.value("format", json()) != kBundleFormat)
    return std::unexpected(
        fmt::format("manifest.json: format is not \"{}\"; not a kgym bundle", kBundleFormat));
  json version = manifest.value("format_version", json());
  if (!version.is_number_integer()) return std::unexpected("manifest.json: format_version is not an integer");
  if (version.get<long long>() != kBundleFormatVersion) {
    return std::unexpected(fmt::format(
        "manifest.json: bundle format version {}; this kgym reads version {}{}", version.dump(),
        kBundleFormatVersion, version.get<long long>() > kBundleFormatVersion ? " (use a newer kgym)" : ""));
  }
  if (!manifest.contains("files") || !manifest["files"].is_array())
    return std::unexpected("manifest.json: no \"files\" list");
  std::set<std::string> listed;
  for (const json& f : manifest["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("sha256") ||
        !f["sha256"].is_string()) {
      return std::unexpected("manifest.json: a \"files\" item without a string path and sha256");
    }
    std::string path = f["path"].get<std::string>();
    if (auto why = util::unsafe_archive_path(path))
      return std::unexpected(fmt::format("manifest.json: '{}': {}", path, *why));
    if (path == name) return std::unexpected("manifest.json: lists itself");
    if (!listed.insert(path).second)
      return std::unexpected(fmt::format("manifest.json: lists '{}' twice", path));
    std::string hash = f["sha256"].get<std::string>();
    if (!is_hex_digest(hash))
      return std::unexpected(
          fmt::format("manifest.json: '{}': sha256 is not 64 lower-case hex digits", path));
    auto file = files.find(path);
    if (file == files.end())
      return std::unexpected(fmt::format("manifest.json lists '{}', which the archive does not hold", path));
    std::string actual = util::sha256_hex(file->second->data);
    if (actual != hash) {
      return std::unexpected(fmt::format(
          "entry '{}': its sha256 {} does not match manifest.json's {} (the file was changed after bundling)",
          path, actual, hash));
    }
  }
  for (const auto& [path, entry] : files) {
    if (path != name && !listed.contains(path))
      return std::unexpected(fmt::format("entry '{}': not listed in manifest.json", path));
  }
  return manifest;
}

// A path the request names: one of the bundle's files.
std::expected<void, std::string> check_request_path(const std::map<std::string, const TarEntry*>& files,
                                                    std::string_view key, const fs::path& path) {
  std::string text = path.string();
  if (auto why = util::unsafe_archive_path(text))
    return std::unexpected(fmt::format("request.json: {} '{}': {}", key, text, *why));
  if (!files.contains(text))
    return std::unexpected(fmt::format("request.json: {} '{}' is not a file of the bundle", key, text));
  return {};
}

std::expected<void, std::string> extract(const std::vector<TarEntry>& entries, const fs::path& root) {
  for (const TarEntry& e : entries) {
    fs::path target = root / e.path;  // a checked relative path: stays below root
    std::error_code ec;
    if (e.type == TarEntry::Type::kDirectory) {
      fs::create_directories(target, ec);
      if (ec) return std::unexpected(fmt::format("cannot create {}: {}", target.string(), ec.message()));
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      return std::unexpected(
          fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
    util::UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd)
      return std::unexpected(fmt::format("cannot create {}: {}", target.string(), std::strerror(errno)));
    std::string_view rest = e.data;
    while (!rest.empty()) {
      ssize_t n = ::write(fd.get(), rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return std::unexpected(fmt::format("cannot write {}: {}", target.string(), std::strerror(errno)));
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  return {};
}

// The device is the verifier's choice (--device); where the recorded cores
// exist here too, the note says how to use the same ones.
void device_hint(const std::string& recorded, const std::string& used, std::vector<std::string>& notes) {
  auto cores = util::parse_cpu_list(recorded);
  std::set<int> allowed = util::allowed_cpus();
  bool here = recorded == "all" || (cores && std::ranges::includes(allowed, *cores));
  notes.push_back(fmt::format("the run verified on cores '{}'; this verification uses '{}'{}", recorded, used,
                              here ? fmt::format(" (give --device {} for the same cores)", recorded) : ""));
}

}  // namespace

std::expected<OpenedBundle, std::string> open_bundle(const fs::path& file, const VerifyRequest& base,
                                                     const BundleLimits& limits) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::unexpected(fmt::format("{}: no such file", file.string()));
  if (auto size = fs::file_size(file, ec); !ec && size > limits.max_archive_bytes) {
    return std::unexpected(fmt::format("{}: {} bytes, more than the {} a bundle may have", file.string(),
                                       size, limits.max_archive_bytes));
  }
  auto packed = util::read_file(file);
  if (!packed) return std::unexpected(packed.error());
  // Headers and padding: at most two blocks per entry beyond the data, and the end.
  std::size_t max_tar = limits.tar.max_total_bytes + 1024 * (limits.tar.max_entries + 2);
  auto archive = util::gzip_decompress(*packed, max_tar);
  if (!archive) return std::unexpected(fmt::format("{}: {}", file.string(), archive.error()));
  auto entries = util::read_tar(*archive, limits.tar);
  if (!entries) return std::unexpected(fmt::format("{}: {}", file.string(), entries.error()));
  std::map<std::string, const TarEntry*> files;
  for (const TarEntry& e : *entries) {
    if (e.type == TarEntry::Type::kFile) files.emplace(e.path, &e);
  }
  auto fail = [&](const std::string& why) {
    return std::unexpected(fmt::format("{}: {}", file.string(), why));
  };
  auto manifest = check_manifest(files);
  if (!manifest) return fail(manifest.error());
  for (std::string_view required : {BundleFiles::kRequest, BundleFiles::kResult, BundleFiles::kProvenance}) {
    if (!files.contains(std::string(required)))
      return fail(fmt::format("no {} at the bundle's root", required));
  }
  OpenedBundle bundle;
  json recorded_request =
      json::parse(files.at(std::string(BundleFiles::kRequest))->data, nullptr, /*allow_exceptions=*/false);
  if (recorded_request.is_discarded()) return fail("request.json: not valid JSON");
  auto request = bundle_request(recorded_request, base, bundle.notes);
  if (!request) return fail(request.error());
  bundle.request = std::move(*request);
  try {
    bundle.recorded = result_from_json(json::parse(files.at(std::string(BundleFiles::kResult))->data));
  } catch (const json::exception& e) {
    return fail(fmt::format("result.json: not a result record: {}", e.what()));
  }
  bundle.provenance =
      json::parse(files.at(std::string(BundleFiles::kProvenance))->data, nullptr, /*allow_exceptions=*/false);
  if (!bundle.provenance.is_object()) return fail("provenance.json: not a JSON object");
  VerifyRequest& req = bundle.request;
  if (auto ok = check_request_path(files, "problem", req.problem); !ok) return fail(ok.error());
  if (auto ok = check_request_path(files, "candidate", req.candidate); !ok) return fail(ok.error());
  if (req.problem == req.candidate) return fail("request.json: the problem and the candidate are one file");

  bundle.dir = std::make_unique<util::TempDir>("kgym-bundle");
  if (bundle.dir->path().empty())
    return fail("cannot create a temporary directory in " + fs::temp_directory_path().string());
  if (auto ok = extract(*entries, bundle.dir->path()); !ok) return fail(ok.error());
  // The reference of a bundle runs as the unprivileged uid (VerifyRequest::
  // untrusted_problem): it must be able to read what was extracted.
  ec.clear();
  fs::permissions(bundle.dir->path(), fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add,
                  ec);
  for (auto it = fs::recursive_directory_iterator(bundle.dir->path(), ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink()) continue;
    fs::permissions(
        it->path(),
        it->is_directory() ? fs::perms::others_read | fs::perms::others_exec : fs::perms::others_read,
        fs::perm_options::add, ec);
  }
  req.problem = bundle.dir->path() / req.problem;
  req.candidate = bundle.dir->path() / req.candidate;
  if (auto recorded = recorded_request.find("device");
      recorded != recorded_request.end() && recorded->is_string() && *recorded != req.device)
    device_hint(recorded->get<std::string>(), req.device, bundle.notes);
  return bundle;
}

}  // namespace kgym::verify
