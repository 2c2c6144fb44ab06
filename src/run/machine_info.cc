#include "run/machine_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "util/fs.h"

namespace kgym::run {
namespace {

nlohmann::json cpu_model() {
  auto text = util::read_file("/proc/cpuinfo");
  if (!text) return nullptr;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return nullptr;
}

nlohmann::json load_average() {
  double load[3];
  if (getloadavg(load, 3) != 3) return nullptr;
  return {load[0], load[1], load[2]};
}

}  // namespace

nlohmann::json machine_info() {
  nlohmann::json m;
  m["cpu_model"] = cpu_model();
  m["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  m["load_average"] = load_average();
  utsname u{};
  m["kernel"] =
      uname(&u) == 0 ? nlohmann::json(std::string(u.sysname) + " " + u.release) : nlohmann::json(nullptr);
  char host[256] = {};
  m["hostname"] = gethostname(host, sizeof host - 1) == 0 ? nlohmann::json(host) : nlohmann::json(nullptr);
  return m;
}

}  // namespace kgym::run
