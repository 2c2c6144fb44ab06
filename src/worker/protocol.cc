#include "worker/protocol.h"

#include <fmt/format.h>

namespace kgym::worker {

std::string encode_message(const Message& message) {
  nlohmann::json header = message.header;
  header["payloads"] = nlohmann::json::array();
  std::size_t total = 0;
  for (const auto& payload : message.payloads) {
    header["payloads"].push_back(payload.size());
    total += payload.size();
  }
  if (!message.fds.empty()) header["fds"] = message.fds.size();
  std::string bytes = header.dump();  // dump() escapes newlines inside strings
  bytes.reserve(bytes.size() + 1 + total);
  bytes.push_back('\n');
  for (const auto& payload : message.payloads) bytes += payload;
  return bytes;
}

void MessageDecoder::feed(std::string_view bytes) {
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

std::expected<std::optional<Message>, std::string> MessageDecoder::next() {
  if (!pending_) {
    auto newline = buffer_.find('\n', consumed_);
    if (newline == std::string::npos) {
      if (buffer_.size() - consumed_ > kMaxHeaderBytes) {
        return std::unexpected(fmt::format("header line longer than {} bytes", kMaxHeaderBytes));
      }
      return std::nullopt;
    }
    std::string_view line(buffer_.data() + consumed_, newline - consumed_);
    Message message;
    message.header = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.header.is_discarded() || !message.header.is_object()) {
      return std::unexpected(fmt::format("header is not a JSON object: {:.80}", line));
    }
    std::vector<std::size_t> sizes;
    if (auto it = message.header.find("payloads"); it != message.header.end()) {
      if (!it->is_array()) return std::unexpected("header field 'payloads' is not an array");
      for (const auto& size : *it) {
        if (!size.is_number_unsigned() || size.get<std::size_t>() > kMaxPayloadBytes) {
          return std::unexpected(fmt::format("bad payload size {}", size.dump()));
        }
        sizes.push_back(size.get<std::size_t>());
      }
    }
    consumed_ = newline + 1;
    pending_ = std::move(message);
    pending_sizes_ = std::move(sizes);
  }
  std::size_t needed = 0;
  for (auto size : pending_sizes_) needed += size;
  if (buffer_.size() - consumed_ < needed) return std::nullopt;
  for (auto size : pending_sizes_) {
    pending_->payloads.emplace_back(buffer_.data() + consumed_, size);
    consumed_ += size;
  }
  Message complete = std::move(*pending_);
  pending_.reset();
  pending_sizes_.clear();
  // Drop consumed bytes so a long-lived decoder does not grow without bound.
  buffer_.erase(0, consumed_);
  consumed_ = 0;
  return complete;
}

}  // namespace kgym::worker
