#include "agent/template.h"

namespace kgym::agent {

std::string expand_template(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      std::size_t close = text.find('}', i + 1);
      if (close != std::string::npos) {
        auto it = values.find(text.substr(i + 1, close - i - 1));
        if (it != values.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace kgym::agent
