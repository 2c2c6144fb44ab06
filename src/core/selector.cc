#include "core/selector.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <utility>

#include <fmt/format.h>

namespace kgym {
namespace {

constexpr std::string_view kForms = "write ids as 19, 19_ReLU or 1:21";

enum class TokenKind { kWord, kComma, kSemicolon, kEquals, kColon, kStray };

struct Token {
  TokenKind kind;
  std::string_view text;
  std::size_t offset;  // 0-based
  std::size_t end() const { return offset + text.size(); }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.';
}

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    std::size_t start = i;
    TokenKind kind = TokenKind::kStray;
    switch (c) {
      case ',': kind = TokenKind::kComma; break;
      case ';': kind = TokenKind::kSemicolon; break;
      case '=': kind = TokenKind::kEquals; break;
      case ':': kind = TokenKind::kColon; break;
      default: break;
    }
    if (kind != TokenKind::kStray) {
      ++i;
    } else if (is_word_char(c)) {
      kind = TokenKind::kWord;
      while (i < s.size() && is_word_char(s[i])) ++i;
    } else {
      // A run of stray characters is reported once (and keeps UTF-8 whole).
      while (i < s.size() && !is_space(s[i]) && !is_word_char(s[i]) && s[i] != ',' && s[i] != ';' &&
             s[i] != '=' && s[i] != ':') {
        ++i;
      }
    }
    tokens.push_back({kind, s.substr(start, i - start), start});
  }
  return tokens;
}

// Splits `tokens` at every `sep`; `seps` receives the separator tokens.
std::vector<std::span<const Token>> split(std::span<const Token> tokens, TokenKind sep,
                                          std::vector<const Token*>& seps) {
  std::vector<std::span<const Token>> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != sep) continue;
    parts.push_back(tokens.subspan(start, i - start));
    seps.push_back(&tokens[i]);
    start = i + 1;
  }
  parts.push_back(tokens.subspan(start));
  return parts;
}

class Parser {
 public:
  explicit Parser(std::string_view selector) : selector_(selector) {}

  ParsedSelector parse() {
    std::vector<Token> tokens = tokenize(selector_);
    if (tokens.empty()) return {{SelectorGroup{std::nullopt, 1, {}}}, {}};
    std::vector<const Token*> semicolons;
    auto groups = split(tokens, TokenKind::kSemicolon, semicolons);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (!groups[g].empty()) {
        parse_group(groups[g]);
      } else if (g + 1 == groups.size() && g > 0) {
        // A trailing ';' is harmless.
      } else {
        const Token* at = g < semicolons.size() ? semicolons[g] : semicolons.back();
        error(at->offset, "empty level group; remove the extra ';'");
      }
    }
    return {std::move(groups_), std::move(errors_)};
  }

 private:
  void error(std::size_t offset, std::string message) { errors_.push_back({offset + 1, std::move(message)}); }

  std::string_view text_of(std::span<const Token> tokens) const {
    return selector_.substr(tokens.front().offset, tokens.back().end() - tokens.front().offset);
  }

  void parse_group(std::span<const Token> tokens) {
    SelectorGroup group;
    group.position = tokens.front().offset + 1;
    std::span<const Token> rest = tokens;
    bool named = false;  // "LEVEL=" seen
    if (tokens.size() >= 2 && tokens[0].kind == TokenKind::kWord && tokens[1].kind == TokenKind::kEquals) {
      group.level = std::string(tokens[0].text);
      rest = tokens.subspan(2);
      named = true;
    } else if (tokens[0].kind == TokenKind::kEquals) {
      error(tokens[0].offset, "'=' needs a level name before it; write e.g. level1=1,3");
      return;
    }
    if (rest.empty() && named) {  // "level1=": the whole level
      groups_.push_back(std::move(group));
      return;
    }
    std::vector<const Token*> commas;
    auto items = split(rest, TokenKind::kComma, commas);
    std::size_t errors_before = errors_.size();
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].empty()) {
        if (auto item = parse_item(items[i])) group.items.push_back(std::move(*item));
      } else if (i + 1 == items.size() && i > 0) {
        // A trailing ',' is harmless.
      } else {
        const Token* at = i < commas.size() ? commas[i] : commas.back();
        error(at->offset, "empty id; remove the extra ','");
      }
    }
    // With every item unreadable the group must not fall back to "whole level".
    if (!group.items.empty() || errors_.size() == errors_before) groups_.push_back(std::move(group));
  }

  std::optional<SelectorItem> parse_item(std::span<const Token> tokens) {
    std::string text(text_of(tokens));
    std::size_t offset = tokens.front().offset;
    bool bad = false;
    for (const Token& t : tokens) {
      if (t.kind == TokenKind::kStray) {
        error(t.offset, fmt::format("unexpected '{}' in '{}'; {}", t.text, text, kForms));
        bad = true;
      } else if (t.kind == TokenKind::kEquals) {
        error(t.offset, fmt::format("unexpected '=' in '{}'; name a level once at the start of a group "
                                    "and separate groups with ';' (level1=1,3;level2=9)",
                                    text));
        bad = true;
      }
    }
    if (bad) return std::nullopt;

    auto kinds = [&](std::initializer_list<TokenKind> want) {
      return std::ranges::equal(tokens, want, [](const Token& t, TokenKind k) { return t.kind == k; });
    };
    if (kinds({TokenKind::kWord})) return parse_word(tokens[0]);
    if (kinds({TokenKind::kWord, TokenKind::kColon, TokenKind::kWord})) {
      auto first = parse_number(tokens[0], "range start");
      auto last = parse_number(tokens[2], "range end");
      if (!first || !last) return std::nullopt;
      if (*first > *last) {
        error(offset, fmt::format("range '{}' runs backwards; write {}:{}", text, *last, *first));
        return std::nullopt;
      }
      return SelectorItem{SelectorItem::Kind::kRange, *first, *last, "", text, offset + 1};
    }
    if (kinds({TokenKind::kWord, TokenKind::kColon})) {
      error(offset, fmt::format("range '{}' has no end; write {}N", text, text));
    } else if (kinds({TokenKind::kColon, TokenKind::kWord})) {
      error(offset, fmt::format("range '{}' has no start; write 1{}", text, text));
    } else if (std::ranges::all_of(tokens, [](const Token& t) { return t.kind == TokenKind::kWord; })) {
      error(tokens[1].offset, fmt::format("missing ',' between '{}' and '{}'; separate ids with ','",
                                          tokens[0].text, tokens[1].text));
    } else {
      error(offset, fmt::format("cannot read '{}'; {}", text, kForms));
    }
    return std::nullopt;
  }

  // A word is "19" or "19_Name".
  std::optional<SelectorItem> parse_word(const Token& word) {
    std::string_view w = word.text;
    std::size_t digits = 0;
    while (digits < w.size() && is_digit(w[digits])) ++digits;
    if (digits == w.size()) {
      auto n = parse_number(word, "id");
      if (!n) return std::nullopt;
      return SelectorItem{SelectorItem::Kind::kNumber, *n, *n, "", std::string(w), word.offset + 1};
    }
    if (digits > 0 && w[digits] == '_' && digits + 1 < w.size()) {
      Token number{TokenKind::kWord, w.substr(0, digits), word.offset};
      auto n = parse_number(number, "id");
      if (!n) return std::nullopt;
      return SelectorItem{SelectorItem::Kind::kStem, *n, *n, std::string(w), std::string(w), word.offset + 1};
    }
    std::string_view after_dash = digits > 0 && w[digits] == '-' ? w.substr(digits + 1) : std::string_view{};
    if (!after_dash.empty() && std::ranges::all_of(after_dash, is_digit)) {
      error(word.offset,
            fmt::format("'{}' is not a range; write it as {}:{}", w, w.substr(0, digits), after_dash));
    } else if (w.size() > 1 && w[0] == '-' && is_digit(w[1])) {
      error(word.offset, fmt::format("'{}' is negative; case ids are numbers from 0 up", w));
    } else if (digits == 0) {
      error(word.offset,
            fmt::format("'{}' is not a case id; write 19 or 19_{}, or '{}=' for a whole level", w, w, w));
    } else {
      error(word.offset, fmt::format("'{}' is not a case id; {}", w, kForms));
    }
    return std::nullopt;
  }

  std::optional<int> parse_number(const Token& t, std::string_view what) {
    std::string_view s = t.text;
    if (s.empty() || !std::ranges::all_of(s, is_digit)) {
      error(t.offset, fmt::format("{} '{}' is not a number; {}", what, s, kForms));
      return std::nullopt;
    }
    int value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc::result_out_of_range) {
      error(t.offset, fmt::format("{} '{}' is too large; case ids are at most {}", what, s, 2147483647));
      return std::nullopt;
    }
    return value;
  }

  std::string_view selector_;
  std::vector<SelectorGroup> groups_;
  std::vector<SelectorParseError> errors_;
};

}  // namespace

ParsedSelector parse_selector(std::string_view selector) { return Parser(selector).parse(); }

bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t i_end = i, j_end = j;
      while (i_end < a.size() && is_digit(a[i_end])) ++i_end;
      while (j_end < b.size() && is_digit(b[j_end])) ++j_end;
      std::string_view x = a.substr(i, i_end - i), y = b.substr(j, j_end - j);
      // Compare without leading zeros: a longer run is the larger number.
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal up to leading zeros: any consistent tie-break
}

}  // namespace kgym
