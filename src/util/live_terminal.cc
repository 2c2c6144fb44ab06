#include "util/live_terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace kgym::util {

bool is_live_terminal(std::FILE* stream) {
  const char* term = std::getenv("TERM");
  return ::isatty(::fileno(stream)) == 1 && !(term && std::strcmp(term, "dumb") == 0);
}

}  // namespace kgym::util
