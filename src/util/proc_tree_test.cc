#include "util/proc_tree.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

TEST(ProcTree, ParsesStatWithSpacesAndParenthesesInTheName) {
  // Fields 14-17 (utime stime cutime cstime) are 7 11 13 17.
  auto stat = parse_proc_stat("42 (a (b) c) S 7 42 42 0 -1 4194304 100 0 0 0 7 11 13 17 20 0 1 0 5 6 7");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->pid, 42);
  EXPECT_EQ(stat->ppid, 7);
  EXPECT_EQ(stat->ticks, 7u + 11 + 13 + 17);
}

TEST(ProcTree, RejectsTruncatedStat) {
  EXPECT_FALSE(parse_proc_stat("42 (x) S 7 42"));
  EXPECT_FALSE(parse_proc_stat("garbage"));
}

TEST(ProcTree, SumsRootsAndEveryDescendantOnce) {
  std::vector<ProcStat> all{{1, 0, 1000}, {10, 1, 5}, {11, 10, 7}, {12, 11, 9}, {20, 1, 100}, {30, 10, 2}};
  EXPECT_EQ(tree_ticks(all, {10}), 5u + 7 + 9 + 2);
  EXPECT_EQ(tree_ticks(all, {11, 20}), 7u + 9 + 100);
  EXPECT_EQ(tree_ticks(all, {99}), 0u);  // gone
}

TEST(ProcTree, ReadsThisProcess) {
  auto all = read_all_proc_stats();
  bool found = false;
  for (const auto& s : all) found = found || s.pid == ::getpid();
  EXPECT_TRUE(found);
  EXPECT_GE(tree_cpu_ns({::getpid()}), 0.0);
}

TEST(ProcTree, ListsThisProcessAndAChildItStarted) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves nothing behind
    if (::getppid() == 1) ::_exit(0);
    ::pause();
    ::_exit(0);
  }
  const std::vector<pid_t> pids = tree_pids({::getpid()});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(std::find(pids.begin(), pids.end(), ::getpid()), pids.end());
  EXPECT_NE(std::find(pids.begin(), pids.end(), child), pids.end());
}

}  // namespace
}  // namespace kgym::util
