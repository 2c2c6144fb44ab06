#include "worker/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "util/file_lock.h"
#include "util/fs.h"
#include "util/sha256.h"
#include "worker/candidate_sandbox.h"
#include "worker/child_process.h"
#include "worker/worker_script.h"

namespace kgym::worker {
namespace {

namespace fs = std::filesystem;

constexpr int kKeyFormat = 1;
// Tells the interpreter, its version and where its torch is, without
// importing torch (a second).
constexpr std::string_view kPythonIdentity =
    "import sys, importlib.util as u\n"
    "s = u.find_spec('torch')\n"
    "print(sys.version.replace('\\n', ' '))\n"
    "print(sys.executable)\n"
    "print(s.origin if s and s.origin else '')\n";
// The environment that changes what torch's extension builder compiles.
constexpr std::string_view kBuildEnv[] = {"CXX",        "CC",
                                          "CUDA_HOME",  "CUDA_PATH",
                                          "ROCM_HOME",  "CFLAGS",
                                          "CXXFLAGS",   "CPPFLAGS",
                                          "LDFLAGS",    "TORCH_CUDA_ARCH_LIST",
                                          "PATH",       "LD_LIBRARY_PATH",
                                          "PYTHONPATH", "PYTHONHOME"};

std::int64_t mtime_ns(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// "name size mtime" of a file that identifies a tool without reading it.
std::string stamp(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return fmt::format("{} {} {}\n", path.string(), ec ? 0 : size, mtime_ns(path));
}

// Every file under `dir` by relative name, with its contents' digest.
std::expected<std::string, std::string> tree_digest(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const auto& entry = *it;
    std::string name = entry.path().lexically_relative(dir).string();
    if (entry.is_symlink()) return std::unexpected(fmt::format("{} is a link", entry.path().string()));
    if (entry.is_directory()) {
      rows.emplace_back(name, "dir");
      continue;
    }
    if (!entry.is_regular_file())
      return std::unexpected(fmt::format("{} is not a file", entry.path().string()));
    auto text = util::read_file(entry.path());
    if (!text) return std::unexpected(text.error());
    rows.emplace_back(name, util::sha256_hex(*text));
  }
  if (ec) return std::unexpected(fmt::format("cannot read {}: {}", dir.string(), ec.message()));
  std::ranges::sort(rows);
  std::string out;
  for (const auto& [name, digest] : rows) out += fmt::format("{}\t{}\n", name, digest);
  return out;
}

// The interpreter, its torch (version.py's text and its libraries' stamps).
std::expected<std::string, std::string> python_identity(const std::string& python,
                                                        std::chrono::steady_clock::time_point deadline) {
  auto run = run_captured({python, "-c", std::string(kPythonIdentity)}, deadline);
  if (!run) return std::unexpected(run.error());
  if (run->exit.signaled || run->exit.code != 0)
    return std::unexpected(fmt::format("{} did not say its torch: {}", python, run->exit.describe()));
  std::string out = run->output;
  std::istringstream lines(run->output);
  std::string line, origin;
  while (std::getline(lines, line)) origin = line;
  if (origin.empty()) return out;
  fs::path torch = fs::path(origin).parent_path();
  auto version = util::read_file(torch / "version.py");
  out += version ? *version : std::string("no version.py\n");
  std::vector<std::string> libraries;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(torch / "lib", ec))
    libraries.push_back(stamp(entry.path()));
  for (const auto& entry : fs::directory_iterator(torch, ec)) {
    if (entry.path().filename().string().starts_with("_C")) libraries.push_back(stamp(entry.path()));
  }
  std::ranges::sort(libraries);
  for (const auto& row : libraries) out += row;
  return out;
}

std::string compilers() {
  std::string out;
  for (const char* name : {"g++", "c++", "gcc", "cc", "nvcc", "ccache"}) {
    auto found = util::find_executable(name);
    std::error_code ec;
    out += found ? stamp(fs::canonical(*found, ec)) : fmt::format("{} none\n", name);
  }
  return out;
}

// Entries of `root` (not the private ".tmp-" copies) newest first.
std::vector<fs::path> entries_newest_first(const fs::path& root) {
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory() || entry.is_symlink()) continue;
    found.emplace_back(mtime_ns(entry.path()), entry.path());
  }
  std::ranges::sort(found, std::greater<>());
  std::vector<fs::path> out;
  for (auto& [time, path] : found) out.push_back(std::move(path));
  return out;
}

std::uintmax_t tree_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file() && !it->is_symlink()) total += it->file_size(ec);
  }
  return total;
}

void touch(const fs::path& path) {
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
}

bool older_than_an_hour(const fs::path& path) {
  std::error_code ec;
  auto written = fs::last_write_time(path, ec);
  return !ec && fs::file_time_type::clock::now() - written > std::chrono::hours(1);
}

// flock(fd, how | LOCK_NB) retried until it succeeds or `wait` has passed.
bool lock_within(int fd, int how, std::chrono::milliseconds wait) {
  auto until = std::chrono::steady_clock::now() + wait;
  while (::flock(fd, how | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Removes a ccache directory unless a build holds it (keyed_ccache_dir):
// the exclusive lock taken here is held while it goes.
void remove_unless_held(const fs::path& dir) {
  util::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

std::expected<std::string, std::string> build_key(const BuildInputs& inputs,
                                                  std::chrono::steady_clock::time_point deadline) {
  auto candidate = tree_digest(inputs.candidate_dir);
  if (!candidate) return std::unexpected(candidate.error());
  auto python = python_identity(inputs.python, deadline);
  if (!python) return std::unexpected(python.error());
  std::string text = fmt::format("kgym build key {}\n== candidate {}\n{}== python\n{}\n", kKeyFormat,
                                 inputs.candidate, *candidate, *python);
  text += "== worker\n";
  for (const auto& file : worker_files())
    text += fmt::format("{}\t{}\n", file.name, util::sha256_hex(file.source));
  text += "== compilers\n" + compilers();
  text += "== environment\n";
  for (auto name : kBuildEnv) {
    const char* value = std::getenv(std::string(name).c_str());
    text += fmt::format("{}={}\n", name, value ? value : "<unset>");
  }
  for (const auto& entry : inputs.env) text += entry + "\n";
  text += fmt::format("== backend\n{} {}\n== init inputs\n{}\n", inputs.backend, inputs.execution,
                      inputs.init_inputs.dump());
  return util::sha256_hex(text);
}

fs::path build_cache_root() { return kgym_cache_root() / "builds"; }
fs::path ccache_cache_root() { return kgym_cache_root() / "ccache-keyed"; }

std::expected<void, std::string> copy_build_dir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::remove_all(to, ec);
  if (auto made = util::make_dirs(to); !made) return made;
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    if (entry.is_symlink()) return std::unexpected(fmt::format("{} is a link", entry.path().string()));
    if (entry.is_regular_file()) {
      if (auto copied = util::copy_regular_file(entry.path(), to / entry.path().filename()); !copied)
        return copied;
      continue;
    }
    if (!entry.is_directory()) return std::unexpected(fmt::format("{} is not a file", entry.path().string()));
    if (auto made = util::make_dirs(to / entry.path().filename()); !made) return made;
    for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
      if (file.is_symlink() || !file.is_regular_file())
        return std::unexpected(fmt::format("{} is not a regular file", file.path().string()));
      if (auto copied =
              util::copy_regular_file(file.path(), to / entry.path().filename() / file.path().filename());
          !copied)
        return copied;
    }
  }
  if (ec) return std::unexpected(fmt::format("cannot read {}: {}", from.string(), ec.message()));
  if (!fs::is_regular_file(to / "manifest.json"))
    return std::unexpected(fmt::format("{} holds no manifest.json", from.string()));
  return {};
}

bool restore_build(const fs::path& root, const std::string& key, const fs::path& to) {
  fs::path entry = root / key;
  std::error_code ec;
  if (!fs::is_directory(entry, ec) || fs::is_symlink(entry, ec)) return false;
  if (!copy_build_dir(entry, to)) {
    fs::remove_all(to, ec);
    return false;
  }
  touch(entry);
  return true;
}

std::expected<void, std::string> store_build(const fs::path& root, const std::string& key,
                                             const fs::path& from) {
  if (auto made = util::make_dirs(root); !made) return made;
  // Only kgym's own uid reads or writes here; the candidate's is another.
  ::chmod(root.c_str(), 0700);
  fs::path entry = root / key;
  std::error_code ec;
  if (fs::is_directory(entry, ec)) {
    touch(entry);
    return {};
  }
  fs::path staging = root / fmt::format(".tmp-{}-{}", key, ::getpid());
  if (auto copied = copy_build_dir(from, staging); !copied) {
    fs::remove_all(staging, ec);
    return copied;
  }
  fs::rename(staging, entry, ec);
  if (ec) fs::remove_all(staging, ec);  // another build of the key kept it first
  // Pruned by one process at a time; a busy lock leaves it to the next store.
  auto lock = util::FileLock::acquire(root / ".lock");
  if (!lock) return {};
  std::size_t kept = 0;
  std::uintmax_t bytes = 0;
  for (const auto& dir : entries_newest_first(root)) {
    std::string name = dir.filename().string();
    if (name.starts_with(".")) {
      if (older_than_an_hour(dir)) fs::remove_all(dir, ec);
      continue;
    }
    bytes += tree_bytes(dir);
    if (++kept > kBuildCacheMaxEntries || (bytes > kBuildCacheMaxBytes && name != key))
      fs::remove_all(dir, ec);
  }
  return {};
}

std::expected<CcacheDir, std::string> keyed_ccache_dir(const fs::path& root, const std::string& key) {
  if (auto made = util::make_dirs(root); !made) return std::unexpected(made.error());
  std::size_t kept = 0;
  for (const auto& dir : entries_newest_first(root)) {
    if (dir.filename() == key) continue;
    if (++kept >= kCcacheMaxDirs && older_than_an_hour(dir)) remove_unless_held(dir);
  }
  fs::path dir = root / key;
  // A remover holds its exclusive lock while the directory goes; once the
  // shared one is taken, the path must still name the directory locked.
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (auto made = util::make_dirs(dir); !made) return std::unexpected(made.error());
    util::UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!held) continue;
    if (!lock_within(held.get(), LOCK_SH, std::chrono::seconds(10)))
      return std::unexpected(fmt::format("{} stayed locked by its remover", dir.string()));
    struct stat locked = {};
    struct stat named = {};
    if (::fstat(held.get(), &locked) == 0 && ::lstat(dir.c_str(), &named) == 0 &&
        locked.st_dev == named.st_dev && locked.st_ino == named.st_ino) {
      touch(dir);
      return CcacheDir(dir, std::move(held));
    }
  }
  return std::unexpected(fmt::format("{} was removed each time it was made", dir.string()));
}

void remove_ccache_dir(const fs::path& root, const std::string& key) {
  if (!key.empty()) remove_unless_held(root / key);
}

std::vector<std::string> ccache_env(const std::optional<fs::path>& dir) {
  // /dev/null: no ccache.conf is read but the system's (/etc, root's).
  std::vector<std::string> env{"CCACHE_CONFIGPATH=/dev/null"};
  if (!dir) {
    env.emplace_back("CCACHE_DISABLE=1");
    return env;
  }
  env.push_back("CCACHE_DIR=" + dir->string());
  env.push_back(fmt::format("CCACHE_MAXSIZE={}", kCcacheMaxSize));
  return env;
}

}  // namespace kgym::worker
