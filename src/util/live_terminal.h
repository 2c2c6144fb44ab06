#pragma once
// Whether output to a stream may redraw a line in place: the one test both
// `kgym run`'s printer and the status line of `kgym verify`/`kgym lint` use.
#include <cstdio>

namespace kgym::util {

// True when `stream` is a terminal and TERM is not "dumb".
bool is_live_terminal(std::FILE* stream);

}  // namespace kgym::util
