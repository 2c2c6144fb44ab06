#pragma once
// The Python worker (python/kgym_worker.py), embedded at build time so the
// binary needs no install tree.
#include <string_view>

namespace kgym::verify {

std::string_view worker_script();

}  // namespace kgym::verify
