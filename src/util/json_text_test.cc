#include "util/json_text.h"

#include <gtest/gtest.h>

namespace kgym::util {
namespace {

TEST(JsonText, IsDumpForWholeUtf8) {
  nlohmann::json j = {{"reason", "x \xc3\xa9 \xe2\x80\xa6"}, {"n", 3}};
  EXPECT_EQ(json_text(j), j.dump());
  EXPECT_EQ(json_text(j, 2), j.dump(2));
}

// A reason quoting a tool's bytes, or evidence cut inside a code point,
// is stored rather than thrown on (dump() would lose the record).
TEST(JsonText, StoresInvalidUtf8AsReplacementCharacters) {
  nlohmann::json j = {{"reason", std::string("bad \xff\xfe byte and a cut \xc3")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  std::string text = json_text(j);
  nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["reason"], "bad \xef\xbf\xbd\xef\xbf\xbd byte and a cut \xef\xbf\xbd");
}

}  // namespace
}  // namespace kgym::util
