#include "util/tar.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/gzip.h"

namespace kgym::util {
namespace {

using Type = TarEntry::Type;

std::vector<TarEntry> sample_entries() {
  return {{"manifest.json", Type::kFile, "{}\n"},
          {"candidate", Type::kDirectory, ""},
          {"candidate/model_new.py", Type::kFile, std::string(1000, 'x')},
          {"candidate/empty.h", Type::kFile, ""},
          {std::string(120, 'd') + "/" + std::string(90, 'f') + ".py", Type::kFile, "long name"}};
}

// A ustar header block written by hand, for entries write_tar refuses to make.
std::string header(std::string_view name, char type, std::uint64_t size, std::string_view link = "") {
  char h[512] = {};
  std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
  std::memcpy(h + 100, "0000644", 7);
  std::memcpy(h + 108, "0000000", 7);
  std::memcpy(h + 116, "0000000", 7);
  std::string s = fmt::format("{:011o}", size);
  std::memcpy(h + 124, s.data(), 11);
  std::memcpy(h + 136, "00000000000", 11);
  h[156] = type;
  std::memcpy(h + 157, link.data(), std::min<std::size_t>(link.size(), 100));
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  std::string c = fmt::format("{:06o}", sum);
  std::memcpy(h + 148, c.data(), 6);
  h[154] = '\0';
  return std::string(h, 512);
}

std::string one_entry_archive(std::string_view name, char type, std::string_view data = "",
                              std::string_view link = "") {
  std::string a = header(name, type, data.size(), link) + std::string(data);
  a.append((512 - data.size() % 512) % 512, '\0');
  return a + std::string(1024, '\0');
}

TEST(Tar, RoundTripKeepsPathsTypesAndBytes) {
  auto archive = write_tar(sample_entries());
  ASSERT_TRUE(archive) << archive.error();
  EXPECT_EQ(archive->size() % 512, 0u);
  auto entries = read_tar(*archive);
  ASSERT_TRUE(entries) << entries.error();
  auto expected = sample_entries();
  ASSERT_EQ(entries->size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*entries)[i].path, expected[i].path);
    EXPECT_EQ((*entries)[i].type, expected[i].type);
    EXPECT_EQ((*entries)[i].data, expected[i].data);
  }
  EXPECT_EQ(*write_tar(sample_entries()), *archive);  // the same entries, the same bytes
}

TEST(Tar, ReadsHandMadeHeadersAndDirectorySlash) {
  auto entries = read_tar(one_entry_archive("dir/", '5'));
  ASSERT_TRUE(entries) << entries.error();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].path, "dir");
  EXPECT_EQ((*entries)[0].type, Type::kDirectory);
}

TEST(Tar, WriterRefusesUnsafeOrOverlongPaths) {
  EXPECT_FALSE(write_tar({{"/etc/passwd", Type::kFile, ""}}));
  EXPECT_FALSE(write_tar({{"a/../b", Type::kFile, ""}}));
  EXPECT_FALSE(write_tar({{std::string(200, 'a'), Type::kFile, ""}}));
}

TEST(Tar, UnsafePathRules) {
  EXPECT_FALSE(unsafe_archive_path("a/b.py"));
  EXPECT_EQ(unsafe_archive_path("/abs"), "absolute path");
  EXPECT_EQ(unsafe_archive_path("../x"), "'..' component");
  EXPECT_EQ(unsafe_archive_path("a/../../x"), "'..' component");
  EXPECT_EQ(unsafe_archive_path("./x"), "'.' component");
  EXPECT_TRUE(unsafe_archive_path("a//b"));
  EXPECT_TRUE(unsafe_archive_path(""));
  EXPECT_TRUE(unsafe_archive_path("a\\b"));
  EXPECT_TRUE(unsafe_archive_path(std::string("a\nb")));
}

TEST(Tar, RefusesAbsolutePath) {
  auto r = read_tar(one_entry_archive("/etc/cron.d/x", '0', "data"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "entry 1 '/etc/cron.d/x': absolute path");
}

TEST(Tar, RefusesDotDot) {
  auto r = read_tar(one_entry_archive("candidate/../../evil.py", '0', "x"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "entry 1 'candidate/../../evil.py': '..' component");
}

TEST(Tar, RefusesLinksAndDevices) {
  auto link = read_tar(one_entry_archive("candidate/model_new.py", '2', "", "/etc/passwd"));
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error(),
            "entry 1 'candidate/model_new.py': is a symbolic link to '/etc/passwd'; only regular files and "
            "directories are allowed");
  auto hard = read_tar(one_entry_archive("a", '1', "", "b"));
  ASSERT_FALSE(hard);
  EXPECT_NE(hard.error().find("hard link"), std::string::npos);
  auto device = read_tar(one_entry_archive("dev", '3'));
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().find("character device"), std::string::npos);
  auto pax = read_tar(one_entry_archive("PaxHeader", 'x', "30 path=/etc/passwd\n"));
  ASSERT_FALSE(pax);
  EXPECT_NE(pax.error().find("pax"), std::string::npos);
}

TEST(Tar, RefusesOversizeFilesTotalsAndCounts) {
  TarLimits limits{.max_entries = 2, .max_file_bytes = 10, .max_total_bytes = 15};
  auto big = read_tar(*write_tar({{"a", Type::kFile, std::string(11, 'x')}}), limits);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error(), "entry 1 'a': 11 bytes, more than the 10 allowed per file");
  auto total =
      read_tar(*write_tar({{"a", Type::kFile, "0123456789"}, {"b", Type::kFile, "0123456789"}}), limits);
  ASSERT_FALSE(total);
  EXPECT_EQ(total.error(), "entry 2 'b': the files exceed 15 bytes together");
  auto many =
      read_tar(*write_tar({{"a", Type::kFile, ""}, {"b", Type::kFile, ""}, {"c", Type::kFile, ""}}), limits);
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error(), "entry 3 'c': more than 2 entries");
}

TEST(Tar, RefusesDuplicatesAndEntriesBelowFiles) {
  auto twice = read_tar(*write_tar({{"a", Type::kFile, "1"}, {"a", Type::kFile, "2"}}));
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error(), "entry 2 'a': appears twice in the archive");
  auto below = read_tar(*write_tar({{"a", Type::kFile, "1"}, {"a/b", Type::kFile, "2"}}));
  ASSERT_FALSE(below);
  EXPECT_EQ(below.error(), "entry 2 'a/b': lies below the file 'a'");
  auto above = read_tar(*write_tar({{"a/b", Type::kFile, "1"}, {"a", Type::kFile, "2"}}));
  ASSERT_FALSE(above);
  EXPECT_EQ(above.error(), "entry 2 'a': is a file above the entry 'a/b'");
}

TEST(Tar, RefusesTruncatedArchives) {
  std::string archive = *write_tar(sample_entries());
  auto inside = read_tar(std::string_view(archive).substr(0, 512 + 2));
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error(),
            "truncated archive: entry 1 'manifest.json' has 3 bytes, the archive ends after 2")
      << inside.error();
  auto no_end = read_tar(std::string_view(archive).substr(0, archive.size() - 1024));
  ASSERT_FALSE(no_end);
  EXPECT_TRUE(no_end.error().starts_with("truncated archive")) << no_end.error();
  EXPECT_FALSE(read_tar(""));
}

TEST(Tar, RefusesGarbageAndBadChecksums) {
  auto garbage = read_tar(std::string(4096, 'Z'));
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error(), "not a tar archive: entry 1 at byte 0 has no ustar header");
  std::string archive = *write_tar(sample_entries());
  archive[5] ^= 1;  // a byte of the first name
  auto flipped = read_tar(archive);
  ASSERT_FALSE(flipped);
  EXPECT_EQ(flipped.error(), "not a tar archive: entry 1 at byte 0: header checksum mismatch");
}

TEST(Gzip, RoundTripAndLimits) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += fmt::format("{} ", i);
  auto packed = gzip_compress(data);
  ASSERT_TRUE(packed) << packed.error();
  EXPECT_LT(packed->size(), data.size());
  auto unpacked = gzip_decompress(*packed, data.size());
  ASSERT_TRUE(unpacked) << unpacked.error();
  EXPECT_EQ(*unpacked, data);
  EXPECT_EQ(*gzip_decompress(*gzip_compress(""), 0), "");
  auto bomb = gzip_decompress(*packed, data.size() - 1);
  ASSERT_FALSE(bomb);
  EXPECT_EQ(bomb.error(), fmt::format("gzip data expands beyond {} bytes", data.size() - 1));
}

TEST(Gzip, RefusesGarbageTruncationAndTrailingData) {
  EXPECT_EQ(gzip_decompress("hello, world", 100).error(),
            "not gzip data (no gzip magic number at its start)");
  std::string packed = *gzip_compress(std::string(5000, 'a') + "tail");
  auto truncated = gzip_decompress(std::string_view(packed).substr(0, packed.size() - 6), 1 << 20);
  ASSERT_FALSE(truncated);
  EXPECT_TRUE(truncated.error().starts_with("truncated gzip data")) << truncated.error();
  auto trailing = gzip_decompress(packed + "junk", 1 << 20);
  ASSERT_FALSE(trailing);
  EXPECT_EQ(trailing.error(), "4 bytes of other data after the gzip stream");
  std::string corrupt = packed;
  corrupt[packed.size() / 2] ^= 0x55;
  corrupt[packed.size() - 5] ^= 0x55;  // the CRC too, should the deflate data survive
  EXPECT_FALSE(gzip_decompress(corrupt, 1 << 20));
}

}  // namespace
}  // namespace kgym::util
