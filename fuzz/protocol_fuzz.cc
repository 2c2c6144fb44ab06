// The worker protocol decoder (worker/protocol.cc): bytes a worker process
// (running a candidate's code) writes to the harness, fed in chunks whose
// sizes come from the input. A message decoded is encoded again and must
// decode to itself.
#include "fuzz/fuzz_util.h"
#include "worker/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kgym::worker;
  if (size == 0) return 0;
  // The first byte sets the chunk size (1..256): a frame cut anywhere.
  const std::size_t chunk = std::size_t{data[0]} + 1;
  std::string_view stream = kgym::fuzz::as_text(data + 1, size - 1);
  MessageDecoder decoder;
  for (std::size_t at = 0; at < stream.size(); at += chunk) {
    decoder.feed(stream.substr(at, chunk));
    while (true) {
      auto next = decoder.next();
      if (!next) {
        if (next.error().empty()) kgym::fuzz::contract_broken("a protocol error without a message");
        return 0;  // the stream is unusable after an error: the harness drops the worker
      }
      if (!*next) break;
      const Message& message = **next;
      MessageDecoder again;
      again.feed(encode_message(message));
      auto round = again.next();
      if (!round || !*round || (**round).payloads != message.payloads || again.buffered() != 0)
        kgym::fuzz::contract_broken("a decoded message does not survive encoding");
    }
  }
  return 0;
}
