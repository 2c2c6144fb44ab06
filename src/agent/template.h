#pragma once
// Expansion of the `{placeholder}` templates in agent.argv and agent.workdir.
#include <map>
#include <string>

namespace kgym::agent {

// Replaces every `{name}` whose name is a key of `values`; other text,
// including unknown `{...}`, is kept as it is (config validation has already
// rejected unknown placeholders).
std::string expand_template(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace kgym::agent
