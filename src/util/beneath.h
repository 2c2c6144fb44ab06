#pragma once
// Reading and copying a file below a directory that an untrusted process
// could write (an agent's workspace, a candidate's directory), without ever
// following what that process made: no symbolic link in ANY component of
// the path, no `..`, no absolute path, only a regular file, and its size
// checked (fstat) before a byte is read, so a sparse 1 GB file costs
// nothing to refuse.
//
// Resolution uses openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS where the kernel has it (Linux 5.6+); where the
// syscall answers ENOSYS it walks the path one component at a time with
// openat(O_NOFOLLOW | O_DIRECTORY). The last component is opened with
// O_NONBLOCK | O_NOCTTY | O_NOFOLLOW so a FIFO or a terminal cannot block
// or take over the caller, and fstat must then say "regular file".
//
// Errors are one line naming the full path, what was wrong and the fix.
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/unique_fd.h"

namespace kgym::util {

// How the path is resolved: kAuto uses openat2 when the kernel has it;
// kWalk always walks component by component (the fallback, for tests).
enum class BeneathResolve { kAuto, kWalk };

// Whether this kernel answers openat2(2) (checked once, by a syscall).
bool openat2_available();

// Whether `relative` names an entry below `root` (of any type; the last
// component may itself be a link) reached without following a link: what
// lies behind a link is never looked at, not even whether it exists.
bool exists_beneath(const std::filesystem::path& root, const std::filesystem::path& relative,
                    BeneathResolve how = BeneathResolve::kAuto);

// `relative` below the directory `root`: an fd open for reading on a
// regular file of at most `max_bytes` bytes. `root` itself is trusted and
// resolved as any path; only what lies below it is checked.
std::expected<UniqueFd, std::string> open_file_beneath(const std::filesystem::path& root,
                                                       const std::filesystem::path& relative,
                                                       std::uintmax_t max_bytes,
                                                       BeneathResolve how = BeneathResolve::kAuto);

// The whole content of that file.
std::expected<std::string, std::string> read_file_beneath(const std::filesystem::path& root,
                                                          const std::filesystem::path& relative,
                                                          std::uintmax_t max_bytes,
                                                          BeneathResolve how = BeneathResolve::kAuto);

// Copies that file to `to` (created or truncated; `to` itself must not be
// a symbolic link), mode 0644. A file that grows past `max_bytes` while it
// is copied is refused and `to` removed.
std::expected<void, std::string> copy_file_beneath(const std::filesystem::path& root,
                                                   const std::filesystem::path& relative,
                                                   const std::filesystem::path& to, std::uintmax_t max_bytes,
                                                   BeneathResolve how = BeneathResolve::kAuto);

}  // namespace kgym::util
