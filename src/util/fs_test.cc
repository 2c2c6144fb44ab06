// The file helpers when the disk fills or a write is cut short: an atomic
// write that fails leaves the old file and no temp file, an append that
// fails leaves whole lines, and a torn last line is dropped on request.
#include "util/fs.h"

#include "util/file_test_util.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "util/temp_dir.h"

namespace kgym::util {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& file) { return read_file(file).value_or("<unreadable>"); }

using testing::put_file;

// Runs `body` in a child whose files may not grow past `limit_bytes`
// (RLIMIT_FSIZE, with SIGXFSZ ignored as kgym's main does); the child's
// exit code is body's return value.
int with_file_size_limit(rlim_t limit_bytes, const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{limit_bytes, limit_bytes};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(100);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(DropTornLastLine, KeepsAWholeLog) {
  TempDir dir("kgym-fs");
  fs::path log = dir.path() / "events.jsonl";
  put_file(log, "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_EQ(drop_torn_last_line(log).value(), 0u);
  EXPECT_EQ(contents(log), "{\"a\":1}\n{\"b\":2}\n");
}

TEST(DropTornLastLine, DropsWhatFollowsTheLastNewline) {
  TempDir dir("kgym-fs");
  fs::path log = dir.path() / "events.jsonl";
  put_file(log, "{\"a\":1}\n{\"b\":");
  EXPECT_EQ(drop_torn_last_line(log).value(), 5u);
  EXPECT_EQ(contents(log), "{\"a\":1}\n");
}

TEST(DropTornLastLine, ALogOfOneTornLineBecomesEmpty) {
  TempDir dir("kgym-fs");
  fs::path log = dir.path() / "events.jsonl";
  put_file(log, std::string(10000, 'x'));  // longer than one block read back
  EXPECT_EQ(drop_torn_last_line(log).value(), 10000u);
  EXPECT_EQ(contents(log), "");
}

TEST(DropTornLastLine, ATornLineLongerThanABlock) {
  TempDir dir("kgym-fs");
  fs::path log = dir.path() / "events.jsonl";
  put_file(log, "whole\n" + std::string(9000, 'y'));
  EXPECT_EQ(drop_torn_last_line(log).value(), 9000u);
  EXPECT_EQ(contents(log), "whole\n");
}

TEST(DropTornLastLine, NoFileIsNothingToDrop) {
  TempDir dir("kgym-fs");
  EXPECT_EQ(drop_torn_last_line(dir.path() / "absent.jsonl").value(), 0u);
}

TEST(AppendLineDurable, AnAppendPastTheLimitLeavesWholeLines) {
  TempDir dir("kgym-fs");
  fs::path log = dir.path() / "events.jsonl";
  put_file(log, "{\"first\":1}\n");
  int code = with_file_size_limit(64, [&] {
    auto ok = append_line_durable(log, std::string(100, 'z'));  // crosses the limit part way
    if (ok) return 1;
    return ok.error().find("File too large") != std::string::npos ? 0 : 2;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(contents(log), "{\"first\":1}\n");
}

TEST(WriteFileAtomic, AWriteThatDoesNotFitKeepsTheOldFileAndNoTempFile) {
  TempDir dir("kgym-fs");
  fs::path file = dir.path() / "result.json";
  put_file(file, "{\"old\":true}\n");
  int code = with_file_size_limit(64, [&] {
    auto ok = write_file_atomic(file, std::string(1000, 'n'));
    if (ok) return 1;
    return ok.error().find("File too large") != std::string::npos ? 0 : 2;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(contents(file), "{\"old\":true}\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "a temp file was left behind";
}

}  // namespace
}  // namespace kgym::util
