#include "util/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#ifndef SYS_openat2
#define SYS_openat2 437  // the same number on every architecture
#endif

namespace kgym::util {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kFix =
    "kgym reads a workspace file only as a regular file below it; write the file itself";

long raw_openat2(int dir_fd, const char* path, int flags, std::uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags);
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

std::string_view type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// The components of `relative`, or why it may not be read: it must be
// relative, without `..`, and name something.
std::expected<std::vector<std::string>, std::string> components_of(const fs::path& relative) {
  if (relative.is_absolute()) return std::unexpected("an absolute path");
  std::vector<std::string> parts;
  for (const fs::path& part : relative) {
    std::string name = part.string();
    if (name == "..") return std::unexpected("a '..' component");
    if (name.empty() || name == ".") continue;
    parts.push_back(std::move(name));
  }
  if (parts.empty()) return std::unexpected("an empty path");
  return parts;
}

// The directory holding the last component, opened without following a
// link: openat2 beneath `root_fd`, else one openat per component.
std::expected<UniqueFd, std::string> open_parent(int root_fd, const std::vector<std::string>& parts,
                                                 BeneathResolve how) {
  int dup_fd = ::fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return std::unexpected(fmt::format("cannot duplicate an fd: {}", std::strerror(errno)));
  UniqueFd dir(dup_fd);
  if (parts.size() == 1) return dir;
  if (how == BeneathResolve::kAuto && openat2_available()) {
    std::string parent;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) parent += (i ? "/" : "") + parts[i];
    long fd = raw_openat2(root_fd, parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    int err = errno;
    if (err == ELOOP) return std::unexpected(fmt::format("'{}' has a symbolic link in its path", parent));
    if (err == ENOTDIR) return std::unexpected(fmt::format("a component of '{}' is not a directory", parent));
    if (err == EXDEV) return std::unexpected(fmt::format("'{}' leads outside the directory", parent));
    if (err == ENOENT) return std::unexpected(fmt::format("'{}' does not exist", parent));
    return std::unexpected(fmt::format("cannot open '{}': {}", parent, std::strerror(err)));
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      struct stat st {};
      if (::fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
        return std::unexpected(fmt::format("component '{}' is {}", parts[i], type_name(st.st_mode)));
      if (err == ENOENT) return std::unexpected(fmt::format("component '{}' does not exist", parts[i]));
      return std::unexpected(fmt::format("cannot open component '{}': {}", parts[i], std::strerror(err)));
    }
    dir.reset(fd);
  }
  return dir;
}

std::string shown(const fs::path& root, const fs::path& relative) { return (root / relative).string(); }

}  // namespace

bool openat2_available() {
  static const bool available = [] {
    long fd = raw_openat2(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_NO_SYMLINKS);
    if (fd >= 0) {
      ::close(static_cast<int>(fd));
      return true;
    }
    return errno != ENOSYS;
  }();
  return available;
}

bool exists_beneath(const fs::path& root, const fs::path& relative, BeneathResolve how) {
  auto parts = components_of(relative);
  if (!parts) return false;
  UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return false;
  auto dir = open_parent(root_fd.get(), *parts, how);
  struct stat st {};
  return dir && ::fstatat(dir->get(), parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::expected<UniqueFd, std::string> open_file_beneath(const fs::path& root, const fs::path& relative,
                                                       std::uintmax_t max_bytes, BeneathResolve how) {
  auto fail = [&](std::string_view why) {
    return std::unexpected(fmt::format("{}: {}; {}", shown(root, relative), why, kFix));
  };
  auto parts = components_of(relative);
  if (!parts) return fail(fmt::format("refused: {}", parts.error()));
  UniqueFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd)
    return std::unexpected(fmt::format("cannot open directory {}: {}", root.string(), std::strerror(errno)));
  auto dir = open_parent(root_fd.get(), *parts, how);
  if (!dir) return fail(dir.error());
  const std::string& last = parts->back();
  // Looked at before it is opened: a device or a FIFO is never opened.
  struct stat before {};
  if (::fstatat(dir->get(), last.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0)
    return fail(errno == ENOENT ? "does not exist" : std::strerror(errno));
  if (!S_ISREG(before.st_mode)) return fail(fmt::format("is {}", type_name(before.st_mode)));
  if (static_cast<std::uintmax_t>(before.st_size) > max_bytes)
    return fail(fmt::format("has {} bytes, more than the {} allowed", before.st_size, max_bytes));
  UniqueFd fd(::openat(dir->get(), last.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return fail(errno == ELOOP ? "is a symbolic link" : std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_ino != before.st_ino || st.st_dev != before.st_dev)
    return fail("was replaced while it was opened");
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    return fail(fmt::format("has {} bytes, more than the {} allowed", st.st_size, max_bytes));
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::expected<std::string, std::string> read_file_beneath(const fs::path& root, const fs::path& relative,
                                                          std::uintmax_t max_bytes, BeneathResolve how) {
  auto fd = open_file_beneath(root, relative, max_bytes, how);
  if (!fd) return std::unexpected(fd.error());
  std::string out;
  char buffer[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return std::unexpected(fmt::format("cannot read {}: {}", shown(root, relative), std::strerror(errno)));
    if (n == 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > max_bytes)
      return std::unexpected(fmt::format("{}: grew past the {} bytes allowed while it was read; {}",
                                         shown(root, relative), max_bytes, kFix));
  }
}

std::expected<void, std::string> copy_file_beneath(const fs::path& root, const fs::path& relative,
                                                   const fs::path& to, std::uintmax_t max_bytes,
                                                   BeneathResolve how) {
  auto from = open_file_beneath(root, relative, max_bytes, how);
  if (!from) return std::unexpected(from.error());
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out) return std::unexpected(fmt::format("cannot create {}: {}", to.string(), std::strerror(errno)));
  auto fail = [&](std::string message) {
    out.reset();
    ::unlink(to.c_str());
    return std::unexpected(std::move(message));
  };
  std::uintmax_t copied = 0;
  char buffer[64 * 1024];
  for (;;) {
    ssize_t n = ::read(from->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(fmt::format("cannot read {}: {}", shown(root, relative), std::strerror(errno)));
    if (n == 0) return {};
    copied += static_cast<std::uintmax_t>(n);
    if (copied > max_bytes)
      return fail(fmt::format("{}: grew past the {} bytes allowed while it was copied; {}",
                              shown(root, relative), max_bytes, kFix));
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out.get(), buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return fail(fmt::format("cannot write {}: {}", to.string(), std::strerror(errno)));
      done += w;
    }
  }
}

}  // namespace kgym::util
