#pragma once
// A Python file as the static rules see it: logical lines of code tokens
// (comments and line breaks dropped, f-string expressions spliced in), each
// with its block depth, plus the few structural queries the rules share.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "static_check/python_tokenizer.h"

namespace kgym::static_check {

struct LogicalLine {
  std::vector<Token> tokens;  // code tokens only; never empty
  int depth = 0;              // number of enclosing indented blocks
  int line = 0;               // line of the first token
};

struct PythonSource {
  std::vector<LogicalLine> lines;
  std::optional<TokenizeError> error;
  std::set<std::string> imported_names;  // every name an import statement binds
  // What each imported name stands for: `import torch.nn.functional as F2`
  // -> F2: "torch.nn.functional"; `from torch.utils.cpp_extension import
  // load_inline as li` -> li: "torch.utils.cpp_extension.load_inline".
  std::map<std::string, std::string> import_targets;
  std::map<std::string, std::vector<std::size_t>> assignments;  // NAME = ... : indices into lines
};

PythonSource parse_python(std::string_view source);

// `name` with its first component replaced by what the import bound to it
// ("F2.relu" -> "torch.nn.functional.relu"); unchanged when not imported.
std::string resolve_import(const PythonSource& src, const std::string& name);

// Index one past the block opened by the compound statement at `line_index`
// (the lines that follow it with a greater depth).
std::size_t block_end(const PythonSource& src, std::size_t line_index);

// The dotted name starting at tokens[i] ("torch.nn.functional.relu"); `end`
// receives the index after it. "" when tokens[i] is not a NAME.
std::string dotted_name(const std::vector<Token>& tokens, std::size_t i, std::size_t* end = nullptr);

// Index of the bracket closing the one at tokens[open], or tokens.size().
std::size_t closing_bracket(const std::vector<Token>& tokens, std::size_t open);

// Index of the first ':' at bracket depth 0 at or after `from`, or tokens.size().
std::size_t header_colon(const std::vector<Token>& tokens, std::size_t from);

// The index of the line `class <name>` at depth 0, if any.
std::optional<std::size_t> find_class(const PythonSource& src, std::string_view name);

// The `def <name>` line inside [begin, end), if any.
std::optional<std::size_t> find_def(const PythonSource& src, std::size_t begin, std::size_t end,
                                    std::string_view name);

// The token index of keyword argument `name=` in the call whose '(' is at
// tokens[open]; the argument's tokens are [result, arg_end).
std::optional<std::size_t> keyword_argument(const std::vector<Token>& tokens, std::size_t open,
                                            std::string_view name, std::size_t* arg_end);

bool is_op(const Token& t, std::string_view text);
bool is_name(const Token& t, std::string_view text);

}  // namespace kgym::static_check
