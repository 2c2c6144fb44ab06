#include "run/machine_info.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "util/fs.h"

namespace kgym::run {
namespace {

constexpr const char* kCpuFreqDir = "/sys/devices/system/cpu/cpu0/cpufreq/";

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

// The first line of a sysfs file, or null when it cannot be read.
nlohmann::json sysfs_text(const std::string& name) {
  auto text = util::read_file(std::string(kCpuFreqDir) + name);
  if (!text) return nullptr;
  std::string line = text->substr(0, text->find('\n'));
  return line.empty() ? nlohmann::json(nullptr) : nlohmann::json(line);
}

// A sysfs frequency in kHz as MHz, or null.
nlohmann::json sysfs_mhz(const std::string& name) {
  auto text = sysfs_text(name);
  if (text.is_null()) return nullptr;
  try {
    return std::stod(text.get<std::string>()) / 1000;
  } catch (const std::exception&) {
    return nullptr;
  }
}

nlohmann::json cores_used() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return nullptr;
  return CPU_COUNT(&set);
}

}  // namespace

nlohmann::json load_average() {
  double load[3];
  if (getloadavg(load, 3) != 3) return nullptr;
  return {load[0], load[1], load[2]};
}

nlohmann::json machine_info(const Config& config, const std::string& torch_version) {
  nlohmann::json m;
  m["cpu_model"] = cpu_model();
  m["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  m["cores_used"] = cores_used();
  m["devices"] = config.devices;
  // 0 means each worker gets as many threads as its device has cores.
  m["threads_per_worker"] = config.verifier.threads > 0 ? nlohmann::json(config.verifier.threads)
                                                        : nlohmann::json("cores of the device");
  m["torch_version"] = torch_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(torch_version);
  m["cpufreq_governor"] = sysfs_text("scaling_governor");
  m["cpufreq_cur_mhz"] = sysfs_mhz("scaling_cur_freq");
  m["cpufreq_max_mhz"] = sysfs_mhz("cpuinfo_max_freq");
  m["load_average"] = load_average();
  utsname u{};
  m["kernel"] =
      uname(&u) == 0 ? nlohmann::json(std::string(u.sysname) + " " + u.release) : nlohmann::json(nullptr);
  char host[256] = {};
  m["hostname"] = gethostname(host, sizeof host - 1) == 0 ? nlohmann::json(host) : nlohmann::json(nullptr);
  return m;
}

}  // namespace kgym::run
