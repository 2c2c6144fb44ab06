#include "static_check/python_tokenizer.h"

#include <gtest/gtest.h>

namespace kgym::static_check {
namespace {

// "KIND:text@line" for every token, e.g. "NAME:x@1".
std::vector<std::string> describe(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) {
    std::string text = t.kind == TokenKind::kNewline || t.kind == TokenKind::kNl ? "" : t.text;
    out.push_back(std::string(to_string(t.kind)) + ":" + text + "@" + std::to_string(t.line));
  }
  return out;
}

TEST(PythonTokenizer, NamesNumbersOperatorsAndLogicalLines) {
  auto s = tokenize_python("x = a.b(1, 2.5e-3) ** 2\ny //= 0x1F\n");
  ASSERT_FALSE(s.error);
  EXPECT_EQ(describe(s.tokens),
            (std::vector<std::string>{"NAME:x@1", "OP:=@1", "NAME:a@1", "OP:.@1", "NAME:b@1", "OP:(@1",
                                      "NUMBER:1@1", "OP:,@1", "NUMBER:2.5e-3@1", "OP:)@1", "OP:**@1",
                                      "NUMBER:2@1", "NEWLINE:@1", "NAME:y@2", "OP://=@2", "NUMBER:0x1F@2",
                                      "NEWLINE:@2", "ENDMARKER:@3"}));
}

TEST(PythonTokenizer, IndentDedentCommentsAndBlankLines) {
  auto s = tokenize_python("class A:\n    # note\n\n    def f(self):\n        return 1\nz = 2\n");
  ASSERT_FALSE(s.error);
  EXPECT_EQ(describe(s.tokens),
            (std::vector<std::string>{"NAME:class@1",     "NAME:A@1",    "OP::@1",     "NEWLINE:@1",
                                      "COMMENT:# note@2", "NL:@2",       "NL:@3",      "INDENT:    @4",
                                      "NAME:def@4",       "NAME:f@4",    "OP:(@4",     "NAME:self@4",
                                      "OP:)@4",           "OP::@4",      "NEWLINE:@4", "INDENT:        @5",
                                      "NAME:return@5",    "NUMBER:1@5",  "NEWLINE:@5", "DEDENT:@6",
                                      "DEDENT:@6",        "NAME:z@6",    "OP:=@6",     "NUMBER:2@6",
                                      "NEWLINE:@6",       "ENDMARKER:@7"}));
}

TEST(PythonTokenizer, ContinuationsInsideBracketsAndBackslash) {
  auto s = tokenize_python("f(a,\n  b)\nx = 1 + \\\n    2\ny\n");
  ASSERT_FALSE(s.error);
  EXPECT_EQ(describe(s.tokens),
            (std::vector<std::string>{"NAME:f@1", "OP:(@1", "NAME:a@1", "OP:,@1", "NL:@1", "NAME:b@2",
                                      "OP:)@2", "NEWLINE:@2", "NAME:x@3", "OP:=@3", "NUMBER:1@3", "OP:+@3",
                                      "NUMBER:2@4", "NEWLINE:@4", "NAME:y@5", "NEWLINE:@5", "ENDMARKER:@6"}));
}

TEST(PythonTokenizer, StringsWithEveryPrefixAndQuote) {
  auto s = tokenize_python(
      "a = r'x\\'y' + b\"z\" + rb'q' + Fr\"{w}\" + u'''t\n'u''' + \"esc\\\"aped\"\nx = '''# not a "
      "comment'''\n");
  ASSERT_FALSE(s.error);
  std::vector<std::string> strings;
  for (const auto& t : s.tokens) {
    if (t.kind == TokenKind::kString) strings.push_back(t.text + "@" + std::to_string(t.line));
  }
  EXPECT_EQ(strings,
            (std::vector<std::string>{"r'x\\'y'@1", "b\"z\"@1", "rb'q'@1", "Fr\"{w}\"@1", "u'''t\n'u'''@1",
                                      "\"esc\\\"aped\"@2", "'''# not a comment'''@3"}));
  for (const auto& t : s.tokens) EXPECT_NE(t.kind, TokenKind::kComment);
}

TEST(PythonTokenizer, NameBeforeQuoteIsNotAlwaysAPrefix) {
  auto s = tokenize_python("print'x'\n");
  ASSERT_FALSE(s.error);
  EXPECT_EQ(s.tokens[0].kind, TokenKind::kName);
  EXPECT_EQ(s.tokens[1].kind, TokenKind::kString);
}

TEST(PythonTokenizer, UnterminatedStringIsAnErrorValue) {
  auto s = tokenize_python("x = 1\ny = 'abc\n");
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->line, 2);
  EXPECT_NE(s.error->message.find("unterminated"), std::string::npos);
  EXPECT_EQ(s.tokens[0].text, "x");  // what was read before the error is kept

  auto triple = tokenize_python("s = \"\"\"never closed\n\n");
  ASSERT_TRUE(triple.error);
  EXPECT_EQ(triple.error->line, 1);
}

TEST(PythonTokenizer, UnclosedBracketIsAnErrorValue) {
  auto s = tokenize_python("f(1,\n");
  ASSERT_TRUE(s.error);
}

TEST(PythonTokenizer, SplitStringToken) {
  auto p = split_string_token("rb'''a\nb'''");
  EXPECT_EQ(p.prefix, "rb");
  EXPECT_EQ(p.body, "a\nb");
  EXPECT_TRUE(p.triple);
  EXPECT_FALSE(p.is_fstring());
  EXPECT_TRUE(split_string_token("F'x'").is_fstring());
  EXPECT_EQ(split_string_token("''").body, "");
}

TEST(PythonTokenizer, FStringExpressionsAreScannedForNames) {
  auto s = tokenize_python("msg = f'''{{literal}} {torch.relu(x)!r:>{width}}\n{inspect.stack()}'''\n");
  ASSERT_FALSE(s.error);
  auto inner = fstring_expression_tokens(s.tokens[2]);
  std::vector<std::string> got;
  for (const auto& t : inner) got.push_back(t.text + "@" + std::to_string(t.line));
  EXPECT_EQ(got, (std::vector<std::string>{"torch@1", ".@1", "relu@1", "(@1", "x@1", ")@1", "inspect@2",
                                           ".@2", "stack@2", "(@2", ")@2"}));
  for (const auto& t : inner) EXPECT_TRUE(t.from_fstring);

  auto spliced = with_fstring_expressions(s.tokens);
  EXPECT_EQ(spliced.size(), s.tokens.size() + inner.size());
  EXPECT_TRUE(fstring_expression_tokens(tokenize_python("'{torch}'\n").tokens[0]).empty());
}

TEST(PythonTokenizer, DebugSpecifierAndNestedStrings) {
  auto s = tokenize_python("f\"{x=} {d['k']}\"\n");
  auto inner = fstring_expression_tokens(s.tokens[0]);
  std::vector<std::string> got;
  for (const auto& t : inner) got.push_back(t.text);
  EXPECT_EQ(got, (std::vector<std::string>{"x", "d", "[", "'k'", "]"}));
}

TEST(PythonTokenizer, DedentToAnUnknownLevelIsAnError) {
  auto s = tokenize_python("if x:\n        a\n    b\n");
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->line, 3);
}

}  // namespace
}  // namespace kgym::static_check
