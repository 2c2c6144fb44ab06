#pragma once
// The one owner of kgym run's terminal output: a line per event, no escape
// codes (the live status line is a later addition here, not elsewhere).
#include <cstdio>
#include <string>

#include "core/result.h"

namespace kgym::run {

class Printer {
 public:
  explicit Printer(std::FILE* out = stdout) : out_(out) {}
  virtual ~Printer() = default;
  virtual void line(const std::string& text);
  // An error or warning for the user: to stderr, so stdout stays parseable.
  virtual void error(const std::string& text);
  // "[3/9] pass             level1/4_Softmax   2.31x  12.3s  <reason>"
  virtual void case_finished(std::size_t done, std::size_t total, const CaseResult& result);

 private:
  std::FILE* out_;
};

}  // namespace kgym::run
