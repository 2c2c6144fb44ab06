#pragma once
// Framing of the worker protocol (docs/worker-protocol.md): a message is one
// JSON header line ('\n'-terminated, no raw newlines inside) followed by raw
// payloads whose byte sizes the header lists under "payloads". Pure code, no
// I/O: the worker process class moves the bytes.
#include <cstddef>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/unique_fd.h"

namespace kgym::worker {

struct Message {
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::string> payloads;  // raw bytes, in header "payloads" order
  // Descriptors passed beside the bytes (SCM_RIGHTS), in header "fds" order:
  // the sealed shared memory of input sets and outputs
  // (util/sealed_memory.h). Shared so that a message stays copyable.
  std::vector<std::shared_ptr<util::UniqueFd>> fds;
};

// Longest header line accepted; anything longer is a protocol violation.
inline constexpr std::size_t kMaxHeaderBytes = 1 << 20;
// Largest single payload accepted (8 GiB), to refuse garbage sizes.
inline constexpr std::size_t kMaxPayloadBytes = std::size_t{8} << 30;

// Bytes of one message: the header (with "payloads" set from `message`,
// and "fds" its number of descriptors when it has any) serialized on one
// line, then the payloads. The descriptors travel with the first byte.
std::string encode_message(const Message& message);

// Incremental decoder: feed bytes as they arrive, take complete messages.
class MessageDecoder {
 public:
  void feed(std::string_view bytes);
  // A complete message, std::nullopt when more bytes are needed, or an error
  // (malformed header, bad payload sizes) after which the stream is unusable.
  std::expected<std::optional<Message>, std::string> next();
  // Bytes received but not yet consumed by a complete message.
  std::size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::string buffer_;
  std::size_t consumed_ = 0;
  std::optional<Message> pending_;  // header parsed, payloads incomplete
  std::vector<std::size_t> pending_sizes_;
};

}  // namespace kgym::worker
