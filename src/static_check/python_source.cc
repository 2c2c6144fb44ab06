#include "static_check/python_source.h"

namespace kgym::static_check {

bool is_op(const Token& t, std::string_view text) { return t.kind == TokenKind::kOp && t.text == text; }
bool is_name(const Token& t, std::string_view text) { return t.kind == TokenKind::kName && t.text == text; }

namespace {

void record_imports(const LogicalLine& l, std::set<std::string>& names,
                    std::map<std::string, std::string>& targets) {
  const auto& t = l.tokens;
  if (is_name(t[0], "import")) {
    // import a.b as c, d  -> c, d
    for (std::size_t i = 1; i < t.size();) {
      std::size_t end = i;
      std::string name = dotted_name(t, i, &end);
      if (name.empty()) break;
      if (end + 1 < t.size() && is_name(t[end], "as")) {
        names.insert(t[end + 1].text);
        targets[t[end + 1].text] = name;
        end += 2;
      } else {
        names.insert(name.substr(0, name.find('.')));
      }
      i = end + 1;  // skip ','
    }
  } else if (is_name(t[0], "from")) {
    std::size_t i = 1;
    std::string module = dotted_name(t, 1);
    while (i < t.size() && !is_name(t[i], "import")) ++i;
    for (++i; i < t.size(); ++i) {
      if (t[i].kind != TokenKind::kName) continue;
      if (i + 2 < t.size() && is_name(t[i + 1], "as")) {
        names.insert(t[i + 2].text);
        if (!module.empty()) targets[t[i + 2].text] = module + "." + t[i].text;
        i += 2;
      } else {
        names.insert(t[i].text);
        if (!module.empty()) targets[t[i].text] = module + "." + t[i].text;
      }
    }
  }
}

}  // namespace

PythonSource parse_python(std::string_view source) {
  PythonSource src;
  TokenStream stream = tokenize_python(source);
  src.error = stream.error;
  int depth = 0;
  LogicalLine current;
  auto flush = [&] {
    if (!current.tokens.empty()) {
      current.line = current.tokens.front().line;
      src.lines.push_back(std::move(current));
    }
    current = LogicalLine{};
    current.depth = depth;
  };
  for (const Token& t : with_fstring_expressions(stream.tokens)) {
    switch (t.kind) {
      case TokenKind::kIndent:
        ++depth;
        current.depth = depth;
        break;
      case TokenKind::kDedent:
        --depth;
        current.depth = depth;
        break;
      case TokenKind::kNewline:
      case TokenKind::kEndMarker: flush(); break;
      case TokenKind::kComment:
      case TokenKind::kNl: break;
      default:
        if (current.tokens.empty()) current.depth = depth;
        current.tokens.push_back(t);
    }
  }
  flush();
  for (std::size_t i = 0; i < src.lines.size(); ++i) {
    const auto& t = src.lines[i].tokens;
    record_imports(src.lines[i], src.imported_names, src.import_targets);
    if (t.size() >= 2 && t[0].kind == TokenKind::kName && is_op(t[1], "="))
      src.assignments[t[0].text].push_back(i);
  }
  return src;
}

std::string resolve_import(const PythonSource& src, const std::string& name) {
  std::size_t dot = name.find('.');
  auto it = src.import_targets.find(name.substr(0, dot));
  if (it == src.import_targets.end()) return name;
  return dot == std::string::npos ? it->second : it->second + name.substr(dot);
}

std::size_t block_end(const PythonSource& src, std::size_t line_index) {
  std::size_t i = line_index + 1;
  while (i < src.lines.size() && src.lines[i].depth > src.lines[line_index].depth) ++i;
  return i;
}

std::string dotted_name(const std::vector<Token>& tokens, std::size_t i, std::size_t* end) {
  std::string name;
  if (i >= tokens.size() || tokens[i].kind != TokenKind::kName) {
    if (end) *end = i;
    return name;
  }
  name = tokens[i].text;
  ++i;
  while (i + 1 < tokens.size() && is_op(tokens[i], ".") && tokens[i + 1].kind == TokenKind::kName) {
    name += "." + tokens[i + 1].text;
    i += 2;
  }
  if (end) *end = i;
  return name;
}

std::size_t closing_bracket(const std::vector<Token>& tokens, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::kOp) continue;
    const std::string& s = tokens[i].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    if ((s == ")" || s == "]" || s == "}") && --depth == 0) return i;
  }
  return tokens.size();
}

std::size_t header_colon(const std::vector<Token>& tokens, std::size_t from) {
  int depth = 0;
  for (std::size_t i = from; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::kOp) continue;
    const std::string& s = tokens[i].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    if (s == ")" || s == "]" || s == "}") --depth;
    if (s == ":" && depth == 0) return i;
  }
  return tokens.size();
}

std::optional<std::size_t> find_class(const PythonSource& src, std::string_view name) {
  for (std::size_t i = 0; i < src.lines.size(); ++i) {
    const auto& t = src.lines[i].tokens;
    if (t.size() >= 2 && is_name(t[0], "class") && is_name(t[1], name)) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> find_def(const PythonSource& src, std::size_t begin, std::size_t end,
                                    std::string_view name) {
  for (std::size_t i = begin; i < end && i < src.lines.size(); ++i) {
    const auto& t = src.lines[i].tokens;
    std::size_t k = is_name(t[0], "async") ? 1 : 0;
    if (t.size() > k + 1 && is_name(t[k], "def") && is_name(t[k + 1], name)) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> keyword_argument(const std::vector<Token>& tokens, std::size_t open,
                                            std::string_view name, std::size_t* arg_end) {
  std::size_t close = closing_bracket(tokens, open);
  int depth = 0;
  for (std::size_t i = open + 1; i < close; ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
    if (t.kind == TokenKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
    if (depth != 0 || !is_name(t, name) || i + 1 >= close || !is_op(tokens[i + 1], "=")) continue;
    std::size_t end = i + 2;
    int d = 0;
    for (; end < close; ++end) {
      const Token& a = tokens[end];
      if (a.kind == TokenKind::kOp && (a.text == "(" || a.text == "[" || a.text == "{")) ++d;
      if (a.kind == TokenKind::kOp && (a.text == ")" || a.text == "]" || a.text == "}")) --d;
      if (d == 0 && is_op(a, ",")) break;
    }
    if (arg_end) *arg_end = end;
    return i + 2;
  }
  return std::nullopt;
}

}  // namespace kgym::static_check
