#pragma once
// An exclusive advisory lock on a file (flock), holding the owner's pid as
// its content. Released when the object dies or the process exits, so a
// crashed holder never leaves a stale lock.
#include <expected>
#include <filesystem>
#include <string>

#include "util/unique_fd.h"

namespace kgym::util {

class FileLock {
 public:
  // Fails (without blocking) when another process holds the lock; the
  // message names the holder's pid when it is known.
  static std::expected<FileLock, std::string> acquire(const std::filesystem::path& path);

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace kgym::util
