#include "util/elf_build_id.h"

#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

// A minimal 64-bit little-endian ELF image: the header, one PT_NOTE
// program header, and the notes it covers.
std::string elf_with_notes(const std::string& notes) {
  std::string image(64 + 56, '\0');
  auto put = [&](std::size_t at, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) image[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  };
  image.replace(0, 4, "\x7f" "ELF");
  image[4] = 2;  // 64-bit
  image[5] = 1;  // little-endian
  put(0x20, 64, 8);  // e_phoff
  put(0x36, 56, 2);  // e_phentsize
  put(0x38, 1, 2);   // e_phnum
  put(64, 4, 4);     // p_type PT_NOTE
  put(64 + 8, image.size(), 8);  // p_offset
  put(64 + 32, notes.size(), 8);  // p_filesz
  return image + notes;
}

std::string note(std::uint32_t type, const std::string& name, const std::string& desc) {
  std::string out;
  auto word = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  word(static_cast<std::uint32_t>(name.size()));
  word(static_cast<std::uint32_t>(desc.size()));
  word(type);
  out += name;
  out.append((4 - name.size() % 4) % 4, '\0');
  out += desc;
  out.append((4 - desc.size() % 4) % 4, '\0');
  return out;
}

TEST(ElfBuildId, FindsTheGnuBuildIdNoteAfterOtherNotes) {
  std::string image = elf_with_notes(note(5, std::string("GNU\0", 4), std::string(16, 'x')) +
                                     note(3, std::string("GNU\0", 4), "\x01\x23\xab\xcd"));
  EXPECT_EQ(elf_build_id(image), "0123abcd");
}

TEST(ElfBuildId, NoneWithoutTheNoteOrForOtherBytes) {
  EXPECT_FALSE(elf_build_id(elf_with_notes(note(1, std::string("GNU\0", 4), "abcd"))));
  EXPECT_FALSE(elf_build_id("not an elf file at all, but long enough to have a header........"));
  // A note whose size runs past the image is not read.
  std::string image = elf_with_notes(note(3, std::string("GNU\0", 4), "\x01\x02\x03\x04"));
  EXPECT_FALSE(elf_build_id(image.substr(0, image.size() - 2)));
}

TEST(ElfBuildId, ReadsTheRunningProgramsOwn) {
  // The test binary is linked with a build id (g++ and clang on Debian
  // pass --build-id), and a copy under another name has the same one.
  auto own = elf_build_id_of("/proc/self/exe");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->size(), 40u);
  EXPECT_FALSE(elf_build_id_of("/nonexistent/file"));
}

}  // namespace
}  // namespace kgym::util
