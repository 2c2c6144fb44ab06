#include "util/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kgym::util {

std::expected<FileLock, std::string> FileLock::acquire(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd)
    return std::unexpected(fmt::format("cannot open lock file {}: {}", path.string(), std::strerror(errno)));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return std::unexpected(
        fmt::format("{} is locked by another kgym process (pid {}); wait for it to finish or stop it",
                    path.string(), holder));
  }
  std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
    return std::unexpected(fmt::format("cannot write lock file {}: {}", path.string(), std::strerror(errno)));
  }
  return FileLock(std::move(fd));
}

}  // namespace kgym::util
