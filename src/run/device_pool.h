#pragma once
// Devices as an exclusive lease pool: a verification holds its device alone,
// so two cases are never timed on one device at the same time.
#include <optional>
#include <string>
#include <vector>

namespace kgym::run {

class DevicePool {
 public:
  explicit DevicePool(std::vector<std::string> devices)
      : devices_(std::move(devices)), busy_(devices_.size()) {}

  // The index of a free device that `usable` accepts, now marked busy;
  // nullopt when there is none.
  template <typename Usable>
  std::optional<std::size_t> acquire(Usable usable) {
    for (std::size_t i = 0; i < busy_.size(); ++i) {
      if (!busy_[i] && usable(i)) {
        busy_[i] = true;
        return i;
      }
    }
    return std::nullopt;
  }
  void release(std::size_t index) { busy_.at(index) = false; }
  bool busy(std::size_t index) const { return busy_.at(index); }
  const std::string& name(std::size_t index) const { return devices_.at(index); }
  std::size_t size() const { return devices_.size(); }

 private:
  std::vector<std::string> devices_;
  std::vector<bool> busy_;
};

}  // namespace kgym::run
