#pragma once
// A Printer for tests: keeps its lines and the cases it was told finished,
// draws nothing.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "run/printer.h"

namespace kgym::run {

class QuietPrinter : public Printer {
 public:
  void line(const std::string& text) override { lines.push_back(text); }
  void error(const std::string& text) override { lines.push_back(text); }
  void case_finished(std::size_t done, std::size_t total, const CaseResult& result) override {
    finished.push_back(fmt::format("{}/{} {}", done, total, result.case_id));
  }
  void progress(const RunState&) override {}
  std::vector<std::string> lines, finished;
};

}  // namespace kgym::run
