#include "worker/protocol.h"

#include <gtest/gtest.h>

namespace kgym::worker {
namespace {

Message sample() {
  Message m;
  m.header = {{"op", "trial"}, {"text", "two\nlines"}};
  m.payloads = {std::string("\x00\x01\n\x02", 4), "", "abc"};
  return m;
}

TEST(Protocol, EncodesHeaderLineThenPayloads) {
  std::string bytes = encode_message(sample());
  auto newline = bytes.find('\n');
  auto header = nlohmann::json::parse(bytes.substr(0, newline));
  EXPECT_EQ(header["payloads"], nlohmann::json::array({4, 0, 3}));
  EXPECT_EQ(bytes.size(), newline + 1 + 7);
}

TEST(Protocol, RoundTripsByteByByte) {
  std::string bytes = encode_message(sample()) + encode_message(sample());
  MessageDecoder decoder;
  std::vector<Message> got;
  for (char c : bytes) {
    decoder.feed(std::string_view(&c, 1));
    for (;;) {
      auto next = decoder.next();
      ASSERT_TRUE(next) << next.error();
      if (!*next) break;
      got.push_back(std::move(**next));
    }
  }
  ASSERT_EQ(got.size(), 2u);
  for (const auto& m : got) {
    EXPECT_EQ(m.header["op"], "trial");
    EXPECT_EQ(m.header["text"], "two\nlines");
    EXPECT_EQ(m.payloads, sample().payloads);
  }
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(Protocol, WaitsForCompletePayloads) {
  std::string bytes = encode_message(sample());
  MessageDecoder decoder;
  decoder.feed(std::string_view(bytes).substr(0, bytes.size() - 1));
  auto next = decoder.next();
  ASSERT_TRUE(next);
  EXPECT_FALSE(*next);
  decoder.feed(std::string_view(bytes).substr(bytes.size() - 1));
  next = decoder.next();
  ASSERT_TRUE(next && *next);
}

TEST(Protocol, RejectsMalformedHeaders) {
  for (std::string bad : {"not json\n", "[1,2]\n", "{\"payloads\": [-1]}\n", "{\"payloads\": 3}\n"}) {
    MessageDecoder decoder;
    decoder.feed(bad);
    EXPECT_FALSE(decoder.next()) << bad;
  }
  MessageDecoder decoder;
  decoder.feed(std::string(kMaxHeaderBytes + 1, 'x'));
  EXPECT_FALSE(decoder.next());
}

}  // namespace
}  // namespace kgym::worker
