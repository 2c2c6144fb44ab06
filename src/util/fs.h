#pragma once
// File helpers that know nothing of kgym. Failures are returned as values
// with a message naming the path and the OS error.
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kgym::util {

// Reads a whole file.
std::expected<std::string, std::string> read_file(const std::filesystem::path& path);

// Writes `data` to `path` atomically: a temp file in the same directory,
// fsync, rename over the target, fsync of the directory. A reader sees the
// old or the new content, never a mix.
// kRenameOnly skips both fsyncs: still all-or-nothing for readers and when
// this process is killed, not across a power loss — for files that are
// rewritten often and can be rebuilt (state.json, SPEC.md, requests).
enum class Durability { kSynced, kRenameOnly };
std::expected<void, std::string> write_file_atomic(const std::filesystem::path& path, std::string_view data,
                                                   Durability durability = Durability::kSynced);

// Appends one line (a '\n' is added; `line` may hold several '\n'-separated
// lines) in one write() and fsyncs; for append-only logs. A write that fails
// part way (ENOSPC, EFBIG) is truncated away, so the log still ends with a
// whole line; only a kill during the write can leave a torn one.
std::expected<void, std::string> append_line_durable(const std::filesystem::path& path,
                                                     std::string_view line);

// Truncates a line log after its last '\n', dropping a torn last line that
// a killed append left. Returns the bytes dropped (0 when the file ends
// with a whole line, is empty or does not exist).
std::expected<std::size_t, std::string> drop_torn_last_line(const std::filesystem::path& path);

// Creates the directory and its parents; ok if it exists.
std::expected<void, std::string> make_dirs(const std::filesystem::path& path);

// Copies a regular file (overwrites). Refuses symlinks and non-regular
// files, so a link planted by an agent cannot pull in other files.
std::expected<void, std::string> copy_regular_file(const std::filesystem::path& from,
                                                   const std::filesystem::path& to);

// The executable file `name` names: itself when it contains a '/', else the
// first match in the directories of $PATH. nullopt when there is none.
std::optional<std::filesystem::path> find_executable(const std::string& name);

}  // namespace kgym::util
