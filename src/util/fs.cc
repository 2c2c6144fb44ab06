#include "util/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/unique_fd.h"

namespace kgym::util {
namespace {

std::string os_error(std::string_view what, const std::filesystem::path& path) {
  return fmt::format("{} {}: {}", what, path.string(), std::strerror(errno));
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::expected<std::string, std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(os_error("cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::unexpected(os_error("cannot read", path));
  return ss.str();
}

std::expected<void, std::string> write_file_atomic(const std::filesystem::path& path, std::string_view data,
                                                   Durability durability) {
  bool sync = durability == Durability::kSynced;
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmpXXXXXX")).string();
  UniqueFd fd(::mkstemp(tmpl.data()));
  if (!fd) return std::unexpected(os_error("cannot create temp file in", dir));
  if (!write_all(fd.get(), data) || (sync && ::fsync(fd.get()) != 0)) {
    std::string err = os_error("cannot write", tmpl);
    ::unlink(tmpl.c_str());
    return std::unexpected(err);
  }
  ::fchmod(fd.get(), 0644);
  fd.reset();
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    std::string err = os_error("cannot rename onto", path);
    ::unlink(tmpl.c_str());
    return std::unexpected(err);
  }
  if (!sync) return {};
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd) ::fsync(dfd.get());
  return {};
}

std::expected<void, std::string> append_line_durable(const std::filesystem::path& path,
                                                     std::string_view line) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) return std::unexpected(os_error("cannot open", path));
  struct stat before {};
  if (::fstat(fd.get(), &before) != 0) return std::unexpected(os_error("cannot stat", path));
  std::string buf(line);
  buf.push_back('\n');
  if (!write_all(fd.get(), buf) || ::fsync(fd.get()) != 0) {
    std::string err = os_error("cannot append to", path);
    (void)::ftruncate(fd.get(), before.st_size);  // the lines before stay whole
    return std::unexpected(err);
  }
  return {};
}

std::expected<std::size_t, std::string> drop_torn_last_line(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return 0;
    return std::unexpected(os_error("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(os_error("cannot stat", path));
  // Read backwards from the end in blocks until the last '\n'.
  off_t end = st.st_size, keep = 0;
  char block[4096];
  for (off_t pos = end; pos > 0 && keep == 0;) {
    off_t start = pos > static_cast<off_t>(sizeof block) ? pos - static_cast<off_t>(sizeof block) : 0;
    ssize_t n = ::pread(fd.get(), block, static_cast<std::size_t>(pos - start), start);
    if (n != pos - start) return std::unexpected(os_error("cannot read", path));
    for (ssize_t i = n; i > 0; --i) {
      if (block[i - 1] == '\n') {
        keep = start + i;
        break;
      }
    }
    pos = start;
  }
  if (keep == end) return 0;
  if (::ftruncate(fd.get(), keep) != 0 || ::fsync(fd.get()) != 0)
    return std::unexpected(os_error("cannot truncate", path));
  return static_cast<std::size_t>(end - keep);
}

std::expected<void, std::string> make_dirs(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return std::unexpected(fmt::format("cannot create directory {}: {}", path.string(), ec.message()));
  return {};
}

std::expected<void, std::string> copy_regular_file(const std::filesystem::path& from,
                                                   const std::filesystem::path& to) {
  std::error_code ec;
  auto st = std::filesystem::symlink_status(from, ec);
  if (ec || !std::filesystem::exists(st))
    return std::unexpected(fmt::format("{} does not exist", from.string()));
  if (!std::filesystem::is_regular_file(st))
    return std::unexpected(fmt::format("{} is not a regular file (links are not followed)", from.string()));
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return std::unexpected(fmt::format("cannot copy {} to {}: {}", from.string(), to.string(), ec.message()));
  return {};
}

std::optional<std::filesystem::path> find_executable(const std::string& name) {
  auto executable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    std::size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : std::string(dir)) / name;
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

}  // namespace kgym::util
