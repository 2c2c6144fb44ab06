#include "static_check/python_tokenizer.h"

#include <array>
#include <cctype>

namespace kgym::static_check {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool is_name_char(char c) { return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

bool is_string_prefix(std::string_view word) {
  if (word.size() > 2) return false;
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::string_view, 8> kPrefixes = {"r", "u", "b", "f", "br", "rb", "fr", "rf"};
  for (auto p : kPrefixes) {
    if (lower == p) return true;
  }
  return false;
}

// Longest first, so "**=" is one token and not "**" "=".
constexpr std::array<std::string_view, 25> kMultiCharOps = {
    "**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "->", "+=",
    "-=",  "*=",  "/=",  "%=",  "&=",  "|=", "^=", "@=", ":=", "<<", ">>", "<>"};

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view src) : src_(src) {}

  TokenStream run() {
    while (pos_ < src_.size() && !out_.error) {
      if (at_line_start_ && depth_ == 0) {
        if (!indentation()) continue;
      }
      step();
    }
    if (!out_.error && depth_ > 0) out_.error = TokenizeError{line_, "end of file inside an open bracket"};
    if (!out_.error) {
      if (!logical_line_empty_) emit(TokenKind::kNewline, "");
      while (indents_.size() > 1) {
        indents_.pop_back();
        emit(TokenKind::kDedent, "");
      }
      emit(TokenKind::kEndMarker, "");
    }
    return std::move(out_);
  }

 private:
  void emit(TokenKind kind, std::string text, int line = 0) {
    out_.tokens.push_back(Token{kind, std::move(text), line ? line : line_, false});
  }

  // Reads the indentation of a new physical line. Returns false when the line
  // was blank or comment-only (already consumed up to its line break).
  bool indentation() {
    int column = 0;
    std::size_t start = pos_;
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\f')) {
      column = src_[pos_] == '\t' ? (column / 8 + 1) * 8 : column + 1;
      ++pos_;
    }
    at_line_start_ = false;
    if (pos_ >= src_.size()) return false;
    char c = src_[pos_];
    if (c == '#' || c == '\n' || c == '\r') {
      if (c == '#') comment();
      if (pos_ < src_.size()) line_break(/*blank=*/true);
      return false;
    }
    if (column > indents_.back()) {
      indents_.push_back(column);
      emit(TokenKind::kIndent, std::string(src_.substr(start, pos_ - start)));
    } else {
      while (column < indents_.back()) {
        indents_.pop_back();
        emit(TokenKind::kDedent, "");
      }
      if (column != indents_.back())
        out_.error = TokenizeError{line_, "unindent does not match any outer level"};
    }
    return true;
  }

  void comment() {
    std::size_t start = pos_;
    while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
    emit(TokenKind::kComment, std::string(src_.substr(start, pos_ - start)));
  }

  void line_break(bool blank) {
    std::string text = src_[pos_] == '\r' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n'
                           ? "\r\n"
                           : std::string(1, src_[pos_]);
    pos_ += text.size();
    bool logical_end = !blank && depth_ == 0 && !logical_line_empty_;
    emit(logical_end ? TokenKind::kNewline : TokenKind::kNl, text);
    if (logical_end) logical_line_empty_ = true;
    ++line_;
    at_line_start_ = depth_ == 0;
  }

  void step() {
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\f') {
      ++pos_;
    } else if (c == '#') {
      comment();
    } else if (c == '\n' || c == '\r') {
      line_break(/*blank=*/false);
    } else if (c == '\\') {
      std::size_t next = pos_ + 1;
      if (next < src_.size() && src_[next] == '\r') ++next;
      if (next < src_.size() && src_[next] == '\n') {
        pos_ = next + 1;
        ++line_;
      } else {
        out_.error = TokenizeError{line_, "unexpected character after line continuation"};
      }
    } else if (c == '"' || c == '\'') {
      string_literal(pos_);
    } else if (is_name_start(c)) {
      std::size_t start = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      std::string_view word = src_.substr(start, pos_ - start);
      if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'') && is_string_prefix(word)) {
        string_literal(start);
      } else {
        code_token(TokenKind::kName, start);
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && pos_ + 1 < src_.size() &&
                std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
      number();
    } else {
      op();
    }
  }

  void code_token(TokenKind kind, std::size_t start, int line = 0) {
    logical_line_empty_ = false;
    emit(kind, std::string(src_.substr(start, pos_ - start)), line);
  }

  // pos_ is at the opening quote; `start` at the first prefix character.
  void string_literal(std::size_t start) {
    int start_line = line_;
    char quote = src_[pos_];
    bool triple = src_.substr(pos_, 3) == std::string(3, quote);
    pos_ += triple ? 3 : 1;
    while (true) {
      if (pos_ >= src_.size()) {
        out_.error = TokenizeError{start_line, "unterminated string literal"};
        return;
      }
      char c = src_[pos_];
      if (c == '\\') {
        if (pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ++line_;
        pos_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) {
          out_.error = TokenizeError{start_line, "unterminated string literal"};
          return;
        }
        ++line_;
      }
      if (c == quote && (!triple || src_.substr(pos_, 3) == std::string(3, quote))) {
        pos_ += triple ? 3 : 1;
        break;
      }
      ++pos_;
    }
    code_token(TokenKind::kString, start, start_line);
  }

  void number() {
    std::size_t start = pos_;
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (is_name_char(c) || c == '.') {
        ++pos_;
      } else if ((c == '+' || c == '-') && (src_[pos_ - 1] == 'e' || src_[pos_ - 1] == 'E') &&
                 !(src_.substr(start, 2) == "0x" || src_.substr(start, 2) == "0X")) {
        ++pos_;
      } else {
        break;
      }
    }
    code_token(TokenKind::kNumber, start);
  }

  void op() {
    std::size_t start = pos_;
    std::string_view rest = src_.substr(pos_);
    std::size_t len = 1;
    for (auto o : kMultiCharOps) {
      if (rest.starts_with(o)) {
        len = o.size();
        break;
      }
    }
    char c = src_[pos_];
    if (c == '(' || c == '[' || c == '{') ++depth_;
    if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
    pos_ += len;
    code_token(TokenKind::kOp, start);
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;
  bool at_line_start_ = true;
  bool logical_line_empty_ = true;
  std::vector<int> indents_{0};
  TokenStream out_;
};

}  // namespace

std::string_view to_string(TokenKind kind) {
  switch (kind) {
    case TokenKind::kName: return "NAME";
    case TokenKind::kNumber: return "NUMBER";
    case TokenKind::kString: return "STRING";
    case TokenKind::kOp: return "OP";
    case TokenKind::kComment: return "COMMENT";
    case TokenKind::kNewline: return "NEWLINE";
    case TokenKind::kNl: return "NL";
    case TokenKind::kIndent: return "INDENT";
    case TokenKind::kDedent: return "DEDENT";
    case TokenKind::kEndMarker: return "ENDMARKER";
  }
  return "?";
}

TokenStream tokenize_python(std::string_view source) { return Tokenizer(source).run(); }

}  // namespace kgym::static_check
