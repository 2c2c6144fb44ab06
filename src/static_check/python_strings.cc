// String-token helpers of python_tokenizer.h: prefix/body splitting and the
// {expressions} of f-strings.
#include <cctype>

#include "static_check/python_tokenizer.h"

namespace kgym::static_check {

bool StringParts::is_fstring() const {
  for (char c : prefix) {
    if (c == 'f' || c == 'F') return true;
  }
  return false;
}

StringParts split_string_token(std::string_view text) {
  StringParts parts;
  std::size_t q = 0;
  while (q < text.size() && text[q] != '"' && text[q] != '\'') ++q;
  parts.prefix = std::string(text.substr(0, q));
  if (q >= text.size()) return parts;
  char quote = text[q];
  parts.triple = text.size() >= q + 6 && text.substr(q, 3) == std::string(3, quote);
  std::size_t open = parts.triple ? 3 : 1;
  if (text.size() >= q + 2 * open) parts.body = text.substr(q + open, text.size() - q - 2 * open);
  return parts;
}

namespace {

// Position of the '}' closing the expression that starts at `pos` (just
// after '{'); `expr_end` receives where the expression itself ends (before a
// top-level '!', ':' or '=' debug marker). npos when unterminated.
std::size_t find_expression_end(std::string_view body, std::size_t pos, std::size_t& expr_end) {
  int depth = 0;
  expr_end = std::string_view::npos;
  for (std::size_t i = pos; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\'' || c == '"') {
      std::size_t close = body.find(c, i + 1);
      if (close == std::string_view::npos) return close;
      i = close;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']') && depth > 0) {
      --depth;
    } else if (c == '}') {
      if (depth == 0) {
        if (expr_end == std::string_view::npos) expr_end = i;
        return i;
      }
      --depth;
    } else if (depth == 0 && expr_end == std::string_view::npos &&
               ((c == '!' && (i + 1 >= body.size() || body[i + 1] != '=')) || c == ':')) {
      expr_end = i;  // a format spec follows; its nested {...} are counted above
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<Token> fstring_expression_tokens(const Token& string_token) {
  std::vector<Token> out;
  if (string_token.kind != TokenKind::kString) return out;
  StringParts parts = split_string_token(string_token.text);
  if (!parts.is_fstring()) return out;
  std::string_view body = parts.body;
  int line = string_token.line;
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\n') ++line;
    if (c != '{') continue;
    if (i + 1 < body.size() && body[i + 1] == '{') {
      ++i;
      continue;
    }
    std::size_t expr_end = 0;
    std::size_t close = find_expression_end(body, i + 1, expr_end);
    if (close == std::string_view::npos) break;
    std::string_view expr = body.substr(i + 1, expr_end - i - 1);
    while (!expr.empty() && expr.back() == '=') expr.remove_suffix(1);  // f"{x=}"
    TokenStream inner = tokenize_python(std::string("(") + std::string(expr) + ")");
    // Drop the wrapping parentheses: the first token and the last operator.
    std::size_t last_op = 0;
    for (std::size_t k = 0; k < inner.tokens.size(); ++k) {
      if (inner.tokens[k].kind == TokenKind::kOp) last_op = k;
    }
    for (std::size_t k = 1; k < last_op; ++k) {
      Token t = inner.tokens[k];
      if (t.kind != TokenKind::kName && t.kind != TokenKind::kNumber && t.kind != TokenKind::kString &&
          t.kind != TokenKind::kOp) {
        continue;
      }
      t.line = line + t.line - 1;
      t.from_fstring = true;
      out.push_back(std::move(t));
      for (const Token& nested : fstring_expression_tokens(out.back())) out.push_back(nested);
    }
    for (std::size_t k = i; k < close; ++k) line += body[k] == '\n';
    i = close;
  }
  return out;
}

std::vector<Token> with_fstring_expressions(const std::vector<Token>& tokens) {
  std::vector<Token> out;
  out.reserve(tokens.size());
  for (const Token& t : tokens) {
    out.push_back(t);
    for (Token& inner : fstring_expression_tokens(t)) out.push_back(std::move(inner));
  }
  return out;
}

}  // namespace kgym::static_check
