#pragma once
// A dataset is a directory of level directories of `<N>_<Name>.py` problem
// files. select_cases() resolves a selector (grammar in docs/cases.md):
//   19            case 19 of the default level
//   19_ReLU       the same, by full name
//   1:21,31       inclusive ranges (missing ids inside a range are skipped)
//   level1=1,3;level2=9;pto_case=1:6   per level
//   level1=       a whole level
// An explicit id that does not exist is an error listing near matches.
// Result order: level name order, then numeric id; duplicates removed.
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

namespace kgym {

struct Case {
  std::string level;           // "level1"
  int number = 0;              // 19
  std::string name;            // "ReLU"
  std::filesystem::path file;  // absolute path of the problem file

  std::string stem() const;  // "19_ReLU"
  std::string id() const;    // "level1/19_ReLU"
};

struct SelectorError {
  std::string message;
};

std::expected<std::vector<Case>, SelectorError> select_cases(const std::filesystem::path& bench_dir,
                                                             const std::string& default_level,
                                                             const std::string& selector);

}  // namespace kgym
