#pragma once
// The GNU build id of an ELF file (its NT_GNU_BUILD_ID note): what names a
// linked object's contents whatever the file is called, so a renamed copy
// of a library is still known as that library. Knows nothing of kgym.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kgym::util {

// The build id in lower-case hex, from an ELF image's bytes (64-bit or
// 32-bit, either byte order); nullopt when the bytes are no ELF file or hold
// no build-id note. Reads only within `image`.
std::optional<std::string> elf_build_id(std::string_view image);

// The same, read from a file (at most its first 64 MiB are searched:
// section and program headers of any object a linker writes lie there).
std::optional<std::string> elf_build_id_of(const std::filesystem::path& file);

}  // namespace kgym::util
