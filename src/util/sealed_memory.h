#pragma once
// Memory shared between processes that nobody can change once it is sealed:
// a memfd whose write, grow, shrink and seal seals are set (memfd_create(2),
// fcntl F_ADD_SEALS). The worker protocol hands the timed calls' input sets
// and takes their outputs in such files (docs/worker-protocol.md): a file
// that arrives sealed cannot be changed by the process that made it, nor by
// anyone it handed the descriptor to, so what was read once is what is read
// later.
#include <cstddef>
#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "util/unique_fd.h"

namespace kgym::util {

// A memfd holding `bytes`, sealed.
std::expected<UniqueFd, std::string> make_sealed_memory(std::string_view name, std::string_view bytes);

// Whether `fd` is a memfd that can no longer be written, grown or shrunk
// (and whose seals cannot be removed: a seal never can).
bool is_sealed(int fd);

// A read-only view of a sealed memfd's whole contents. The mapping keeps the
// memory alive after the descriptor is closed.
class SealedView {
 public:
  // Fails when `fd` is not sealed (see is_sealed) or cannot be mapped.
  static std::expected<SealedView, std::string> map(int fd);
  SealedView(SealedView&& other) noexcept;
  SealedView& operator=(SealedView&& other) noexcept;
  SealedView(const SealedView&) = delete;
  SealedView& operator=(const SealedView&) = delete;
  ~SealedView();

  std::string_view bytes() const { return {data_, size_}; }
  // The `size` bytes at `offset`, or an empty optional-like error when they
  // lie outside the file.
  std::expected<std::string_view, std::string> slice(std::uint64_t offset, std::uint64_t size) const;

 private:
  SealedView(const char* data, std::size_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace kgym::util
