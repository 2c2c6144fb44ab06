#include "util/sealed_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace kgym::util {
namespace {

constexpr int kAllSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;

// F_ADD_SEALS, tried again while the kernel answers EBUSY: sealing against
// writes waits about 150 ms for the kernel's own transient references to the
// file's pages to go, then gives up; these waits, about 3 s in all, follow.
// The same schedule as kgym_worker_shared.py's add_seals.
int add_seals(int fd, int seals) {
  using std::chrono::milliseconds;
  for (int wait_ms : {50, 100, 200, 400, 800, 1600}) {
    if (::fcntl(fd, F_ADD_SEALS, seals) == 0) return 0;
    if (errno != EBUSY) return -1;
    std::this_thread::sleep_for(milliseconds(wait_ms));
  }
  return ::fcntl(fd, F_ADD_SEALS, seals);
}

}  // namespace

std::expected<UniqueFd, std::string> make_sealed_memory(std::string_view name, std::string_view bytes) {
  UniqueFd fd(::memfd_create(std::string(name).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return std::unexpected(fmt::format("memfd_create: {}", std::strerror(errno)));
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::unexpected(fmt::format("writing a memfd: {}", std::strerror(errno)));
    written += static_cast<std::size_t>(n);
  }
  if (add_seals(fd.get(), kAllSeals) != 0)
    return std::unexpected(fmt::format("sealing a memfd: {}", std::strerror(errno)));
  return fd;
}

bool is_sealed(int fd) {
  int seals = ::fcntl(fd, F_GET_SEALS);
  constexpr int kNeeded = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;
  return seals >= 0 && (seals & kNeeded) == kNeeded;
}

std::expected<SealedView, std::string> SealedView::map(int fd) {
  if (!is_sealed(fd)) return std::unexpected(std::string("the shared memory is not sealed"));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(fmt::format("fstat: {}", std::strerror(errno)));
  auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return SealedView(nullptr, 0);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return std::unexpected(fmt::format("mmap: {}", std::strerror(errno)));
  return SealedView(static_cast<const char*>(data), size);
}

SealedView::SealedView(SealedView&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SealedView& SealedView::operator=(SealedView&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SealedView::~SealedView() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

std::expected<std::string_view, std::string> SealedView::slice(std::uint64_t offset, std::uint64_t size) const {
  if (offset > size_ || size > size_ - offset)
    return std::unexpected(fmt::format("bytes {}..{} lie outside the {} bytes shared", offset, offset + size, size_));
  return std::string_view(data_ + offset, static_cast<std::size_t>(size));
}

}  // namespace kgym::util
