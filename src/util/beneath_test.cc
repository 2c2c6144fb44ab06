// Reading below an untrusted directory: links anywhere in the path, `..`,
// absolute paths, FIFOs, devices and oversize (sparse) files are refused,
// by openat2 and by the component walk alike.
#include "util/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "util/file_test_util.h"
#include "util/fs.h"
#include "util/temp_dir.h"

namespace kgym::util {
namespace {

namespace fs = std::filesystem;

using testing::put_file;

class BeneathTest : public ::testing::TestWithParam<BeneathResolve> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    work_ = dir_.path() / "work";
    host_ = dir_.path() / "host";
    fs::create_directories(work_ / "lib");
    fs::create_directories(host_);
    put_file(work_ / "model_new.py", "class ModelNew: pass\n");
    put_file(work_ / "lib" / "helper.py", "def f(): pass\n");
    put_file(host_ / "secret.txt", "host secret\n");
  }
  std::expected<std::string, std::string> read(const fs::path& relative, std::uintmax_t max = 1 << 20) {
    return read_file_beneath(work_, relative, max, GetParam());
  }

  TempDir dir_{"kgym-beneath-test"};
  fs::path work_, host_;
};

TEST_P(BeneathTest, ReadsRegularFilesAtAnyDepth) {
  EXPECT_EQ(read("model_new.py").value_or("?"), "class ModelNew: pass\n");
  EXPECT_EQ(read("lib/helper.py").value_or("?"), "def f(): pass\n");
  EXPECT_EQ(read("./lib/./helper.py").value_or("?"), "def f(): pass\n");
}

TEST_P(BeneathTest, RefusesALinkInTheMiddleComponent) {
  fs::create_directory_symlink(host_, work_ / "sub");
  auto text = read("sub/secret.txt");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().find("sub"), std::string::npos) << text.error();
  EXPECT_EQ(text.error().find("host secret"), std::string::npos);
}

TEST_P(BeneathTest, SaysNothingOfWhatLiesBehindALink) {
  fs::create_directory_symlink(host_, work_ / "sub");
  EXPECT_FALSE(exists_beneath(work_, "sub/secret.txt", GetParam()));
  EXPECT_TRUE(exists_beneath(work_, "sub", GetParam()));  // the link itself is there
  EXPECT_TRUE(exists_beneath(work_, "lib/helper.py", GetParam()));
  EXPECT_FALSE(exists_beneath(work_, "lib/missing.py", GetParam()));
  EXPECT_FALSE(exists_beneath(work_, "../host/secret.txt", GetParam()));
}

TEST_P(BeneathTest, RefusesALinkDeeperInThePath) {
  fs::create_directory_symlink(host_, work_ / "lib" / "deep");
  EXPECT_FALSE(read("lib/deep/secret.txt"));
}

TEST_P(BeneathTest, RefusesALinkAtTheEnd) {
  fs::create_symlink(host_ / "secret.txt", work_ / "notes.md");
  auto text = read("notes.md");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().find("symbolic link"), std::string::npos) << text.error();
  // A link to a file inside the directory is refused as well.
  fs::create_symlink("model_new.py", work_ / "alias.py");
  EXPECT_FALSE(read("alias.py"));
}

TEST_P(BeneathTest, RefusesDotDotAndAbsolutePaths) {
  auto up = read("../host/secret.txt");
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().find("'..'"), std::string::npos) << up.error();
  EXPECT_FALSE(read("lib/../../host/secret.txt"));
  auto absolute = read(host_ / "secret.txt");
  ASSERT_FALSE(absolute);
  EXPECT_NE(absolute.error().find("absolute"), std::string::npos) << absolute.error();
  EXPECT_FALSE(read(""));
}

TEST_P(BeneathTest, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo((work_ / "pipe.py").c_str(), 0600), 0);
  auto text = read("pipe.py");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().find("FIFO"), std::string::npos) << text.error();
}

TEST_P(BeneathTest, RefusesDevicesAndDirectories) {
  // A device node needs root to make; a link to one is refused as a link.
  if (::mknod((work_ / "null.py").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    auto text = read("null.py");
    ASSERT_FALSE(text);
    EXPECT_NE(text.error().find("character device"), std::string::npos) << text.error();
  }
  fs::create_symlink("/dev/zero", work_ / "zero.py");
  EXPECT_FALSE(read("zero.py"));
  auto dir = read("lib");
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().find("a directory"), std::string::npos) << dir.error();
  EXPECT_FALSE(read("missing.py"));
  EXPECT_FALSE(read("model_new.py/x"));
}

TEST_P(BeneathTest, RefusesAnOversizeSparseFileBeforeReadingIt) {
  {
    int fd = ::open((work_ / "big.py").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 1100LL << 20), 0);  // 1.1 GB of holes
    ::close(fd);
  }
  auto text = read("big.py", 1 << 20);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().find("more than the 1048576 allowed"), std::string::npos) << text.error();
  fs::path to = dir_.path() / "copy.py";
  auto copied = copy_file_beneath(work_, "big.py", to, 1 << 20, GetParam());
  ASSERT_FALSE(copied);
  EXPECT_FALSE(fs::exists(to));
  // Opened (not read) when the limit allows it.
  EXPECT_TRUE(open_file_beneath(work_, "big.py", 1200LL << 20, GetParam()));
}

TEST_P(BeneathTest, CopiesARegularFile) {
  fs::path to = dir_.path() / "copy.py";
  ASSERT_TRUE(copy_file_beneath(work_, "lib/helper.py", to, 1 << 20, GetParam()));
  EXPECT_EQ(read_file(to).value_or("?"), "def f(): pass\n");
  // The destination is never a link that leads elsewhere.
  fs::create_symlink(host_ / "secret.txt", dir_.path() / "planted.py");
  EXPECT_FALSE(copy_file_beneath(work_, "model_new.py", dir_.path() / "planted.py", 1 << 20, GetParam()));
  EXPECT_EQ(read_file(host_ / "secret.txt").value_or("?"), "host secret\n");
}

TEST_P(BeneathTest, RefusesACopyThroughALinkedDirectory) {
  fs::remove_all(work_ / "lib");
  fs::create_directory_symlink(host_, work_ / "lib");
  fs::path to = dir_.path() / "helper.py";
  auto copied = copy_file_beneath(work_, "lib/secret.txt", to, 1 << 20, GetParam());
  ASSERT_FALSE(copied);
  EXPECT_FALSE(fs::exists(to));
}

INSTANTIATE_TEST_SUITE_P(Resolvers, BeneathTest,
                         ::testing::Values(BeneathResolve::kAuto, BeneathResolve::kWalk),
                         [](const auto& info) {
                           return info.param == BeneathResolve::kAuto ? "Auto" : "Walk";
                         });

TEST(Openat2, IsAnsweredByThisKernelOrFallsBack) {
  // Either way the answer is stable; on Linux 5.6+ it is true.
  EXPECT_EQ(openat2_available(), openat2_available());
}

}  // namespace
}  // namespace kgym::util
