#pragma once
// A tokenizer for Python source, close to the standard library's `tokenize`:
// names, numbers, strings (every prefix, single/double/triple quotes,
// escapes), operators, comments, NEWLINE (end of a logical line), NL (a line
// break inside a logical line or a blank line), INDENT/DEDENT and line
// continuations. The static checks run on these tokens, so a comment or a
// string never looks like code and code is never hidden by one.
//
// Errors (an unterminated string or bracket) are values: the tokens read so
// far are returned together with the error.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym::static_check {

enum class TokenKind { kName, kNumber, kString, kOp, kComment, kNewline, kNl, kIndent, kDedent, kEndMarker };
std::string_view to_string(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::kEndMarker;
  std::string text;           // exact source text (INDENT: the indentation; DEDENT/ENDMARKER: "")
  int line = 0;               // 1-based line where the token starts
  bool from_fstring = false;  // spliced in from an f-string's {expression}
};

struct TokenizeError {
  int line = 0;
  std::string message;
};

struct TokenStream {
  std::vector<Token> tokens;  // ends with kEndMarker unless error is set
  std::optional<TokenizeError> error;
};

TokenStream tokenize_python(std::string_view source);

// The parts of a STRING token: its prefix ("rb", "f", ...), its body between
// the quotes (raw: escapes are not processed) and whether it is triple-quoted.
struct StringParts {
  std::string prefix;
  std::string_view body;
  bool triple = false;
  bool is_fstring() const;
};
StringParts split_string_token(std::string_view token_text);

// The tokens of the {expressions} inside an f-string token ({{ and }} are
// literal braces; a format spec after ':' or '!' is skipped), with the line
// numbers of the source. Empty for a string that is not an f-string.
std::vector<Token> fstring_expression_tokens(const Token& string_token);

// The token stream with every f-string's expression tokens inserted right
// after the f-string token (marked from_fstring), so name-based rules see them.
std::vector<Token> with_fstring_expressions(const std::vector<Token>& tokens);

}  // namespace kgym::static_check
