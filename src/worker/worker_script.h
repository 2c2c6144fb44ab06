#pragma once
// The Python worker (boxed/kgym_worker*.py), embedded at build time so the
// binary needs no install tree.
#include <span>
#include <string_view>

namespace kgym::worker {

struct WorkerFile {
  std::string_view name;  // file name, e.g. "kgym_worker.py"
  std::string_view source;
};

// The worker's files; the first is the entry script, the others are modules
// it imports from its own directory.
std::span<const WorkerFile> worker_files();

}  // namespace kgym::worker
