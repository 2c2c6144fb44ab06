#pragma once
// The POSIX ustar archive format (512-byte blocks: a header per entry, the
// data padded to a block, two zero blocks at the end), written and read in
// memory. Knows nothing of kgym.
//
// Reading is for archives nobody vouches for: only regular files and
// directories are accepted, every path must be a plain relative path (no
// `/` at the start, no `..`, no `.` or empty components), entries may not
// repeat or nest under a file, and sizes and counts have limits. The first
// violation is the error, naming the entry and the rule it breaks.
//
// Why not libarchive: its secure-extraction flags act only when it extracts
// to disk, and with NODOTDOT, SECURE_SYMLINKS and NOABSOLUTEPATHS set it
// still creates a symbolic link to /etc/passwd, a FIFO or a hard link, and
// lets a repeated entry replace the first; kgym's rules (regular files and
// directories only, each once, limits before any allocation, every check on
// the archive in memory before anything is written) would be ours either
// way. The reader is fuzzed (fuzz/tar_fuzz.cc).
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym::util {

struct TarEntry {
  enum class Type { kFile, kDirectory };
  std::string path;  // '/'-separated and relative; no trailing '/' (also for directories)
  Type type = Type::kFile;
  std::string data;  // a file's bytes; empty for a directory
};

struct TarLimits {
  std::size_t max_entries = 4096;
  std::uint64_t max_file_bytes = 64ULL << 20;    // one file
  std::uint64_t max_total_bytes = 256ULL << 20;  // every file together
};

// The archive of `entries`, in their order (mode 0644 for files and 0755
// for directories, owner 0, mtime 0, so that the same entries give the same
// bytes). An error when a path is unsafe (see safe_archive_path) or too long
// for ustar's 100-byte name and 155-byte prefix fields.
std::expected<std::string, std::string> write_tar(const std::vector<TarEntry>& entries);

// The entries of `archive`, in archive order. Errors: "entry N 'PATH': RULE"
// for an entry that breaks a rule (a link, a device, an unsafe path, a limit,
// a bad header checksum); "truncated archive ..." when the data ends inside
// an entry or before the end-of-archive blocks; "not a tar archive ..." when
// a header is garbage.
std::expected<std::vector<TarEntry>, std::string> read_tar(std::string_view archive,
                                                           const TarLimits& limits = {});

// Why `path` is not a plain relative archive path ("absolute path", "'..'
// component", ...), or nullopt when it is one. Printable ASCII only, no
// backslash, each component at most 255 bytes.
std::optional<std::string> unsafe_archive_path(std::string_view path);

}  // namespace kgym::util
