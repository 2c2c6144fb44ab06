// Input sets of the timing phase (timing_session_internal.h): the reference
// worker draws them from get_inputs() into sealed files, each set under a
// seed of its own.
#include <string>
#include <vector>

#include "util/sealed_memory.h"
#include "util/seed_mix.h"
#include "verify/timing_session_internal.h"

namespace kgym::verify::timing_internal {

std::optional<std::vector<std::shared_ptr<const SetFile>>> TimingSession::make_sets(const std::vector<int>& counts) {
  // Set k of the verification is drawn under the k-th seed that follows
  // from set_seeds: make_sets_of counts every set it asks for.
  std::vector<std::vector<std::uint64_t>> seeds;
  std::uint64_t next = sets_made_;
  for (int count : counts) {
    auto& group = seeds.emplace_back();
    for (int i = 0; i < count; ++i) group.push_back(util::splitmix64(inputs_.set_seeds + ++next) >> 1);
  }
  return make_sets_of(std::move(seeds));
}

std::optional<std::vector<std::shared_ptr<const SetFile>>> TimingSession::make_sets_of(
    std::vector<std::vector<std::uint64_t>> seeds, std::string_view what) {
  auto groups = nlohmann::json::array();
  std::vector<int> counts;
  for (const auto& group : seeds) {
    groups.push_back(group);
    counts.push_back(static_cast<int>(group.size()));
    sets_made_ += group.size();
  }
  worker::Message request;
  request.header = {{"op", "sets"}, {"groups", std::move(groups)}};
  auto sent = now_ns();
  auto reply = exchange_(Role::kReference, request, what);
  if (!reply) return std::nullopt;
  make_ns_ += elapsed_ns(sent);
  const auto& described = reply->header.value("groups", nlohmann::json::array());
  if (described.size() != counts.size() || reply->fds.size() != counts.size()) {
    note_("timing: the reference answered `sets` without a file per group");
    return std::nullopt;
  }
  std::vector<std::shared_ptr<const SetFile>> files;
  for (std::size_t g = 0; g < counts.size(); ++g) {
    // The reference is trusted, but a file that is not sealed could still
    // be changed by whoever else holds it: refused like a broken reply.
    if (!util::is_sealed(reply->fds[g]->get())) {
      note_("timing: the reference's input sets arrived unsealed");
      return std::nullopt;
    }
    const auto& layouts = described[g].value("sets", nlohmann::json::array());
    if (layouts.size() != static_cast<std::size_t>(counts[g])) return std::nullopt;
    set_bytes_ += described[g].value("bytes", 0.0);
    files.push_back(std::make_shared<const SetFile>(SetFile{reply->fds[g], layouts, std::move(seeds[g])}));
  }
  return files;
}

}  // namespace kgym::verify::timing_internal
