#include "history/location.h"

#include <cstdlib>

namespace kgym::history {

std::filesystem::path default_history_db() {
  const char* data = std::getenv("XDG_DATA_HOME");
  if (data != nullptr && *data == '/') return std::filesystem::path(data) / "kgym" / "history.db";
  const char* home = std::getenv("HOME");
  std::filesystem::path base = home != nullptr && *home != '\0' ? home : ".";
  return base / ".local" / "share" / "kgym" / "history.db";
}

std::filesystem::path history_db_path(const std::optional<std::filesystem::path>& flag,
                                      const std::optional<std::filesystem::path>& configured) {
  if (flag) return *flag;
  if (configured) return *configured;
  return default_history_db();
}

}  // namespace kgym::history
